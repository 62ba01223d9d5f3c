"""Every page, charts drawn, in one Chromium: no console error and no Content-Security-Policy
violation at all (plotly's styles included: they come from static files or the policy's hashes).
The login page is visited signed out, every other page as a compliance admin."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from core.roles import Role
from scoring.classifier.threshold import describe_rule
from scoring.constants import MessageStatus
from scoring.models import Conversation, ModelComparison
from tests.factories import (
    MessageFactory,
    ModelVersionFactory,
    ReviewDecisionFactory,
    UserFactory,
    reviewable_message,
)
from tests.monitoring.browser.test_monitoring_browser import CHARTS, monitored  # noqa: F401
from tests.monitoring.test_reviewers_page import pair
from tests.reviews.browser.conftest import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_no_page_logs_a_console_error_breaks_the_csp_or_overflows_the_window(new_page, monitored, settings):  # noqa: F811
    settings.DOUBLE_REVIEW_RATE = 1.0  # blind pairs, so that the reviewers page draws its kappa chart
    first = UserFactory(username="pair_first", role=Role.REVIEWER)
    second = UserFactory(username="pair_second", role=Role.REVIEWER)
    pair(first, second, "guaranteed_returns", "guaranteed_returns")
    pair(first, second, "no_claim", "no_claim")
    in_review = reviewable_message(model_version=monitored, attention=True)
    decision = ReviewDecisionFactory(reviewer=UserFactory(username="page_reviewer", role=Role.REVIEWER))
    MessageFactory(status=MessageStatus.FAILED, failed_at=timezone.now(), status_reason="crashed alone")
    thread = Conversation.objects.create(kind=Conversation.Kind.EMAIL_THREAD, key="email:p@x", title="Fund")
    MessageFactory(conversation=thread, subject="Fund")
    # the rule in words as training stores it: the longest text of the models page's table
    challenger = ModelVersionFactory(name="v-challenger", threshold_rule=describe_rule(0.90, 0.80))
    comparison = ModelComparison.objects.create(
        baseline=monitored, candidate=challenger, status=ModelComparison.Status.DONE, results={}
    )
    signed_out = {reverse("login"): None}
    pages = {
        reverse("home"): None,
        reverse("reviews:queue"): None,
        # the heat-map is drawn once the attention panel is opened
        reverse("reviews:message", args=[in_review.pk]): "#attention-plot .main-svg",
        reverse("reviews:conversation", args=[thread.pk]): None,
        reverse("reviews:escalations"): None,
        reverse("reviews:records"): None,
        reverse("reviews:record", args=[decision.pk]): None,
        reverse("reviews:audit_chain"): None,
        reverse("reviews:training_data"): None,
        reverse("reviews:models"): None,
        reverse("reviews:model_detail", args=[monitored.pk]): None,
        reverse("reviews:comparison", args=[comparison.pk]): None,
        reverse("explanations:faithfulness"): None,
        reverse("explanations:how_attention_works"): "#attention-demo-full .main-svg",
        reverse("monitoring:dashboard") + "?period=day": ", ".join(f"#{chart} .main-svg" for chart in CHARTS),
        reverse("monitoring:reviewers") + "?days=30&period=day": "#chart-kappa .main-svg",
        reverse("monitoring:failed"): None,
        reverse("monitoring:rule_drafts"): None,
    }
    page = new_page()
    page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
    problems = {}

    def visit(path: str, drawn: str | None) -> None:
        page.console_errors.clear()
        page.csp_violations.clear()
        # plotly.js (3.5 MB) runs before DOMContentLoaded: on a busy machine that took 40 s
        response = page.goto(path, wait_until="domcontentloaded", timeout=60_000)
        assert response is not None and response.ok, (path, response and response.status)
        if "#attention-plot" in (drawn or ""):
            page.locator("#attention-panel summary").click()
        if drawn:
            for selector in drawn.split(", "):
                page.wait_for_selector(selector, state="attached", timeout=60_000)
        page.wait_for_load_state("networkidle")
        # nothing pushes the page sideways: a table cell that cannot wrap once made the models
        # page 2,000 px wide in a 1,300 px window
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if page.console_errors or page.csp_violations or overflow > 0:
            problems[path] = {
                "console": list(page.console_errors),
                "csp": list(page.csp_violations),
                "wider than the window by (px)": overflow,
            }

    for path, drawn in signed_out.items():
        visit(path, drawn)
    sign_in(page, "carl_admin")
    for path, drawn in pages.items():
        visit(path, drawn)

    assert problems == {}
