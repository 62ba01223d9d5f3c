"""Every page, charts drawn, in one Chromium: no console error and no Content-Security-Policy
violation at all (plotly's styles included: they come from static files or the policy's hashes)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.roles import Role
from tests.factories import ReviewDecisionFactory, UserFactory, reviewable_message
from tests.monitoring.browser.test_monitoring_browser import CHARTS, monitored  # noqa: F401
from tests.reviews.browser.conftest import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_no_page_logs_a_console_error_or_breaks_the_csp(new_page, monitored):  # noqa: F811
    in_review = reviewable_message(model_version=monitored, attention=True)
    decision = ReviewDecisionFactory(reviewer=UserFactory(username="page_reviewer", role=Role.REVIEWER))
    pages = {
        reverse("home"): None,
        reverse("reviews:queue"): None,
        # the heat-map is drawn once the attention panel is opened
        reverse("reviews:message", args=[in_review.pk]): "#attention-plot .main-svg",
        reverse("reviews:escalations"): None,
        reverse("reviews:records"): None,
        reverse("reviews:record", args=[decision.pk]): None,
        reverse("reviews:audit_chain"): None,
        reverse("reviews:training_data"): None,
        reverse("reviews:models"): None,
        reverse("reviews:model_detail", args=[monitored.pk]): None,
        reverse("explanations:faithfulness"): None,
        reverse("explanations:how_attention_works"): "#attention-demo-full .main-svg",
        reverse("monitoring:dashboard") + "?period=day": ", ".join(f"#{chart} .main-svg" for chart in CHARTS),
    }
    page = new_page()
    page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
    sign_in(page, "carl_admin")
    problems = {}
    for path, drawn in pages.items():
        page.console_errors.clear()
        page.csp_violations.clear()
        response = page.goto(path)
        assert response is not None and response.ok, (path, response and response.status)
        if "#attention-plot" in (drawn or ""):
            page.locator("#attention-panel summary").click()
        if drawn:
            for selector in drawn.split(", "):
                page.wait_for_selector(selector, state="attached", timeout=30_000)
        page.wait_for_load_state("networkidle")
        if page.console_errors or page.csp_violations:
            problems[path] = {"console": list(page.console_errors), "csp": list(page.csp_violations)}

    assert problems == {}
