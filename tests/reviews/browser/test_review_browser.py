"""The review and audit flows in a real browser: keyboard decisions, two reviewers at once, the
auditor's search and CSV export, and a script payload that must stay text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from reviews.models import ReviewDecision
from tests.factories import AttentionDiagnosticFactory, ReviewDecisionFactory, UserFactory, reviewable_message
from tests.reviews.browser.conftest import screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def people(committed_decisions):
    return {
        "rita": UserFactory(username="rita_reviewer", role="reviewer"),
        "rob": UserFactory(username="rob_reviewer", role="reviewer"),
        "ada": UserFactory(username="ada_auditor", role="auditor"),
    }


def assert_no_csp_violation(page) -> None:
    """No Content-Security-Policy violation at all, plotly.js's included: plotly injects no style
    (templates/includes/plotly_head.html serves its stylesheet from static files, and the CSP
    allows its two constant style attributes by hash), so nothing is left to excuse
    (tests/reviews/browser/test_pages_browser.py holds every page to the same)."""
    assert page.csp_violations == [], page.csp_violations


def test_a_reviewer_takes_the_next_message_sees_the_evidence_decides_with_the_keyboard(new_page, people):
    top = reviewable_message(
        score=0.96,
        body="Dear client, our fund offers guaranteed returns of 9% every single year.",
        attention=True,
    )
    other = reviewable_message(
        score=0.7, body="Please find the quarterly statement attached.", rule_phrase=None
    )
    page = new_page()
    sign_in(page, "rita_reviewer")
    page.goto("/review/queue/")
    assert page.locator(f'tr[data-message-id="{top.pk}"]').count() == 1

    page.keyboard.press("n")
    page.wait_for_url(f"**/review/messages/{top.pk}/")
    rule_mark = page.locator("#message-body mark.rule")
    assert rule_mark.first.inner_text() in ("guaranteed", "guaranteed returns")
    assert page.locator("#message-body .heat-p5").count() >= 1
    # The strongest word is visibly coloured, also where it lies inside the rule phrase.
    expect(page.locator("#message-body mark.rule.heat-p5").first).to_have_css(
        "background-color", "rgb(255, 167, 38)"
    )
    assert "Check passed" in page.locator("section.verdict").inner_text()
    assert "Removing the 2 highlighted words" in page.locator("section.verdict").inner_text()
    assert "Keyboard shortcuts" in page.content()

    page.locator("#attention-panel summary").click()
    page.wait_for_selector("#attention-plot .main-svg", timeout=30_000)
    expect(page.locator("#attention-status")).to_contain_text("Layer 1, head 1")
    page.select_option("#attention-layer", "1")
    page.select_option("#attention-head", "1")
    expect(page.locator("#attention-status")).to_contain_text("Layer 2, head 2")
    screenshot(page, "reviewer-evidence")

    page.keyboard.press("1")  # claim type 1 (guaranteed returns), marks it a claim
    assert page.locator('input[name="verdict"][value="claim"]').is_checked()
    page.keyboard.press("/")
    page.keyboard.type("Promises a fixed yearly return.")
    page.keyboard.press("Escape")
    screenshot(page, "reviewer-decision-filled")
    page.keyboard.press("s")
    page.wait_for_url("**/review/queue/")
    assert "recorded on" in page.locator(".flash").inner_text()
    assert page.locator(f'tr[data-message-id="{top.pk}"]').count() == 0
    assert page.locator(f'tr[data-message-id="{other.pk}"]').count() == 1
    screenshot(page, "reviewer-queue-after-decision")

    decision = ReviewDecision.objects.get(message=top)
    assert (decision.verdict, decision.claim_type.code, decision.note) == (
        "claim",
        "guaranteed_returns",
        "Promises a fixed yearly return.",
    )
    assert_no_csp_violation(page)


def test_two_reviewers_in_two_browsers_get_different_messages(new_page, people):
    for score in (0.9, 0.8, 0.7):
        reviewable_message(score=score)
    rita, rob = new_page(), new_page()
    sign_in(rita, "rita_reviewer")
    sign_in(rob, "rob_reviewer")
    rita.goto("/review/queue/")
    rob.goto("/review/queue/")
    # Both press "Review next" before either page has loaded the answer.
    rita.click("#review-next button", no_wait_after=True)
    rob.click("#review-next button", no_wait_after=True)
    rita.wait_for_url(re.compile(r".*/review/messages/\d+/$"))
    rob.wait_for_url(re.compile(r".*/review/messages/\d+/$"))
    assert rita.url != rob.url
    assert rita.locator("#decision-form").count() == 1
    assert rob.locator("#decision-form").count() == 1
    screenshot(rita, "two-reviewers-rita")
    screenshot(rob, "two-reviewers-rob")


def test_an_auditor_finds_a_decision_and_exports_csv(new_page, people):
    decision = ReviewDecisionFactory(
        reviewer=people["rita"], message=reviewable_message(external_id="AUD-7731"), note="Clear guarantee."
    )
    ReviewDecisionFactory(reviewer=people["rob"], verdict="no_claim")
    page = new_page()
    sign_in(page, "ada_auditor")
    page.goto("/review/records/")
    page.fill("#id_q", "AUD-7731")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**q=AUD-7731**")
    rows = page.locator("tbody tr")
    assert rows.count() == 1
    assert "AUD-7731" in rows.first.inner_text()
    screenshot(page, "auditor-search")
    page.click(f'a[href="/review/records/{decision.pk}/"]')
    assert decision.content_hash in page.content()
    assert "matches" in page.locator("#h-chain ~ dl").inner_text()
    screenshot(page, "auditor-record")
    page.go_back()
    with page.expect_download() as download_info:
        page.click("#export-csv")
    download = download_info.value
    text = Path(download.path()).read_text(encoding="utf-8")
    lines = text.strip().splitlines()
    assert lines[0].startswith("sequence,decided_at,external_id")
    assert len(lines) == 2 and "AUD-7731" in lines[1] and decision.content_hash in lines[1]


def test_a_script_payload_in_a_message_renders_as_text_and_runs_nothing(new_page, people):
    payload = '<script>alert("xss")</script><img src=x onerror="alert(1)"> guaranteed returns'
    message = reviewable_message(body=payload)
    page = new_page()
    sign_in(page, "rita_reviewer")
    page.goto(f"/review/messages/{message.pk}/")
    body_text = page.locator("#message-body").inner_text()
    assert '<script>alert("xss")</script>' in body_text
    assert '<img src=x onerror="alert(1)">' in body_text
    assert page.locator("#message-body script, #message-body img").count() == 0
    screenshot(page, "script-payload-message-page")
    page.goto("/review/queue/")
    # Every script and resource has run once the network is idle: a dialog would have opened.
    page.wait_for_load_state("networkidle")
    assert page.dialogs == []
    assert_no_csp_violation(page)
    screenshot(page, "script-payload-queue-page")


def test_markup_in_attention_tokens_is_shown_as_text_in_the_heat_map(new_page, people):
    message = reviewable_message(explanation=False)
    tokens = ["[CLS]", "<b>bold</b>", "<a href='javascript:alert(3)'>x</a>", "[SEP]"]
    AttentionDiagnosticFactory(prediction=message.routing_prediction, tokens=tokens)
    page = new_page()
    sign_in(page, "rita_reviewer")
    page.goto(f"/review/messages/{message.pk}/")
    page.locator("#attention-panel summary").click()
    page.wait_for_selector("#attention-plot .main-svg", timeout=30_000)
    ticks = page.locator("#attention-plot .xtick text").all_text_contents()
    assert "<b>bold</b>" in ticks
    assert page.locator("#attention-plot a").count() == 0
    assert page.dialogs == []
    screenshot(page, "attention-token-markup-as-text")


TIMELINE_CHARTS = (
    "chart-disagreement",
    "chart-length",
    "chart-scores",
    "chart-rules",
    "chart-explanations",
    "chart-queue",
)


def test_every_timeline_chart_of_the_monitoring_page_marks_the_activation(new_page, people):
    from scoring.models import ModelActivation
    from tests.factories import ModelVersionFactory

    version = ModelVersionFactory(name="v-marked", is_active=True)
    activation = ModelActivation.objects.create(model_version=version, reason="the first version")
    UserFactory(username="carl_admin", role="compliance_admin")
    page = new_page()
    sign_in(page, "carl_admin")
    page.goto("/monitoring/")
    for chart in TIMELINE_CHARTS:
        page.wait_for_function(
            """([id, at]) => { const c = document.getElementById(id);
                return !!(c && c.layout && (c.layout.shapes || []).some(
                  s => s.type === "line" && s.yref === "paper" && s.x0 === at)); }""",
            arg=[chart, activation.activated_at.isoformat()],
        )
    screenshot(page, "monitoring-activation-markers")
