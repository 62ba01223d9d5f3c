"""Every page, charts drawn, in one Chromium: no console error and no Content-Security-Policy
violation at all (plotly's styles included: they come from static files or the policy's hashes),
and nothing wider than the window, in a desktop window (1,280 px) and a phone's (390 px).
The login page is visited signed out, every other page as a compliance admin, with rows in every
table: a table pushes the page sideways only once its rows are wide."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from django.utils import timezone

from core.roles import Role
from monitoring.backtest import rule_backtest_request, rule_backtest_run
from scoring.classifier.threshold import describe_rule
from scoring.constants import MessageStatus
from scoring.models import Conversation, ModelComparison, RuleSet
from scoring.selectors import clear_compiled_rules_cache
from scoring.services.rule_sets import RuleDraft, rule_set_draft_create
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

# A desktop window, then a phone's: a page may scroll down, never sideways.
WINDOWS = ({"width": 1280, "height": 800}, {"width": 390, "height": 844})
OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
# What a page wider than its window names: the outermost elements that reach past its right edge,
# outside any box that scrolls on its own (a .table-scroll), so that the failure says where to look.
WIDE_ELEMENTS = """() => {
  const edge = document.documentElement.clientWidth + 0.5;
  const clips = (el) => getComputedStyle(el).overflowX !== "visible";
  const found = [];
  for (const el of document.body.querySelectorAll("*")) {
    if (el.getBoundingClientRect().right <= edge) continue;
    let parent = el.parentElement;
    while (parent && parent !== document.body && !clips(parent)
           && parent.getBoundingClientRect().right <= edge) {
      parent = parent.parentElement;
    }
    if (parent !== document.body) continue;
    const name = typeof el.className === "string" ? el.className.trim().split(/\\s+/).join(".") : "";
    found.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (name ? "." + name : "")
               + ": " + Math.round(el.getBoundingClientRect().right) + " px");
  }
  return found.slice(0, 5);
}"""


def test_no_page_logs_a_console_error_breaks_the_csp_or_overflows_the_window(new_page, monitored, settings):  # noqa: F811
    settings.DOUBLE_REVIEW_RATE = 1.0  # blind pairs, so that the reviewers page draws its kappa chart
    admin = UserFactory(username="carl_admin", role=Role.COMPLIANCE_ADMIN)
    admin.is_staff = True  # the Django admin's pages too
    admin.save(update_fields=["is_staff"])
    first = UserFactory(username="pair_first", role=Role.REVIEWER)
    second = UserFactory(username="pair_second", role=Role.REVIEWER)
    pair(first, second, "guaranteed_returns", "guaranteed_returns")
    pair(first, second, "no_claim", "no_claim")
    in_review = reviewable_message(model_version=monitored, attention=True)
    page_reviewer = UserFactory(username="page_reviewer", role=Role.REVIEWER)
    decision = ReviewDecisionFactory(reviewer=page_reviewer, note="Reads as a promise of a yearly return.")
    ReviewDecisionFactory(
        reviewer=page_reviewer, verdict="escalate", escalation_reason="Is a target return a promise?"
    )
    MessageFactory(status=MessageStatus.FAILED, failed_at=timezone.now(), status_reason="crashed alone")
    thread = Conversation.objects.create(kind=Conversation.Kind.EMAIL_THREAD, key="email:p@x", title="Fund")
    MessageFactory(conversation=thread, subject="Fund")
    # the rule in words as training stores it: the longest text of the models page's table
    challenger = ModelVersionFactory(name="v-challenger", threshold_rule=describe_rule(0.90, 0.80))
    comparison = ModelComparison.objects.create(
        baseline=monitored, candidate=challenger, status=ModelComparison.Status.DONE, results={}
    )
    # a draft with a finished backtest: its changes and its results are tables
    draft = rule_set_draft_create(
        base=RuleSet.objects.get(is_active=True),
        user=admin,
        note="catch moon talk",
        add=[
            RuleDraft(
                code="PF-900",
                claim_type="performance_forecast",
                pattern=r"\b(?:to|towards)\s+the\s+moon\b",
                context_terms=("coin", "token"),
            )
        ],
    )
    rule_backtest_run(backtest_id=rule_backtest_request(draft=draft, user=admin, days=30).pk)
    signed_out = {reverse("login"): None}
    pages = {
        reverse("home"): None,
        reverse("reviews:queue"): None,
        # the heat-map is drawn once the attention panel is opened
        reverse("reviews:message", args=[in_review.pk]): "#attention-plot .main-svg",
        reverse("reviews:message", args=[decision.message_id]): None,
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
        reverse("monitoring:rule_draft", args=[draft.pk]): "#backtest-results",
        # Swagger UI draws the API's operations from the schema
        reverse("api-docs"): "#swagger-ui .opblock",
        reverse("admin:index"): None,
        reverse("admin:scoring_ruleset_changelist"): None,
    }
    page = new_page()
    page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
    problems = {}

    def visit(path: str, drawn: str | None, width: int) -> None:
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
        # page 2,000 px wide in a 1,300 px window, and the header alone was 431 px on a phone
        overflow = page.evaluate(OVERFLOW)
        if page.console_errors or page.csp_violations or overflow > 0:
            problems[f"{path} at {width} px"] = {
                "console": list(page.console_errors),
                "csp": list(page.csp_violations),
                "wider than the window by (px)": overflow,
                "reaching past its edge": page.evaluate(WIDE_ELEMENTS) if overflow > 0 else [],
            }

    for window in WINDOWS:
        page.set_viewport_size(window)
        for path, drawn in signed_out.items():
            visit(path, drawn, window["width"])
        sign_in(page, "carl_admin")
        for path, drawn in pages.items():
            visit(path, drawn, window["width"])
        page.context.clear_cookies()
    clear_compiled_rules_cache()

    assert problems == {}, json.dumps(problems, indent=1)
