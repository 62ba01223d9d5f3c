import re

import pytest
from django.urls import reverse

from reviews.models import ReviewDecision
from reviews.services import lock_claim
from tests.factories import ExplanationFactory, MessageFactory, ReviewDecisionFactory, reviewable_message

pytestmark = pytest.mark.django_db


def page(client, message):
    response = client.get(reverse("reviews:message", args=[message.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_a_script_payload_in_the_body_is_shown_as_text(reviewer_client):
    message = reviewable_message(
        body='<script>alert("x")</script><img src=x onerror=alert(1)> guaranteed returns'
    )
    html = page(reviewer_client, message)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<script>alert" not in html
    assert "<img src=x" not in html


def test_the_rule_phrase_is_marked_and_the_attribution_is_a_word_level_heat(reviewer_client):
    message = reviewable_message(body="Our fund offers guaranteed returns every year.")
    html = page(reviewer_client, message)
    body = re.search(r'<div class="message-body"[^>]*>(.*?)</div>', html, re.S).group(1)
    assert '<mark class="rule heat-p5" title="Rule GR-' in body
    assert ">guaranteed</mark>" in body
    assert (
        re.search(r'<span class="seg heat-p1" title="attribution 0\.0100">fund</span>', body) is None
    )  # floor
    assert re.sub(r"<[^>]+>", "", body) == message.body


def test_the_evidence_panel_shows_score_threshold_type_model_version_and_rule(reviewer_client):
    message = reviewable_message(score=0.873)
    html = page(reviewer_client, message)
    match = message.rule_matches.get()
    assert "0.873" in html
    assert "0.500 (at or above: flagged)" in html
    assert "Guaranteed returns" in html
    assert message.routing_prediction.model_version.name in html
    assert f"{match.rule_code}</span> (rule set v{match.rule_set_version}" in html


def test_a_qa_sample_below_the_threshold_shows_its_type_as_the_closest_not_as_predicted(reviewer_client):
    # given a message the model did not flag (a QA sample) and one it flagged
    sampled = reviewable_message(
        body="Lunch is at noon on Friday.", score=0.02, qa_sample=True, rule_phrase=None
    )
    flagged = reviewable_message(score=0.91)

    # then the unflagged one's claim type reads as the nearest, with the model's "no claim"
    html = page(reviewer_client, sampled)
    assert "Closest claim type" in html and "Predicted claim type" not in html
    assert "below the threshold: the model predicts no claim" in html
    html = page(reviewer_client, flagged)
    assert "Predicted claim type" in html and "Closest claim type" not in html
    queue = reviewer_client.get(reverse("reviews:queue")).content.decode()
    assert "not flagged (closest: Guaranteed returns)" in queue


def test_a_passed_check_says_the_highlight_explains_the_flag_with_its_numbers(reviewer_client):
    message = reviewable_message()
    html = page(reviewer_client, message)
    assert "Check passed" in html
    assert "Removing the 2 highlighted words moves the score from 0.91 to 0.12" in html
    assert "Pass rule: passes when comprehensiveness" in html
    assert "0.790" in html  # comprehensiveness


def test_the_attribution_says_whether_its_word_scores_add_up(reviewer_client):
    message = reviewable_message()
    html = page(reviewer_client, message)
    assert "the word scores add up to the score change: |delta| 0.012 &le; 0.05" in html
    assert "(32 steps, bfloat16 gradients)" in html
    unconverged = reviewable_message(explanation=False)
    ExplanationFactory(
        message=unconverged, prediction=unconverged.routing_prediction, convergence_delta=0.31, n_steps=128
    )
    html = page(reviewer_client, unconverged)
    assert "<strong>the word scores do not add up</strong>" in html
    assert "|delta| 0.310 &gt; 0.05, so their sizes are approximate" in html
    assert "(128 steps, bfloat16 gradients)" in html


def test_a_failed_check_says_plainly_that_the_highlight_does_not_explain_the_flag(reviewer_client):
    message = reviewable_message(explanation=False)
    ExplanationFactory(message=message, prediction=message.routing_prediction, passed=False)
    html = page(reviewer_client, message)
    assert "Check failed: the highlight does not explain the flag." in html
    assert "treat the colours with suspicion" in html


def test_a_failed_explanation_says_so_and_highlights_nothing(reviewer_client):
    message = reviewable_message(explanation=False)
    ExplanationFactory(
        message=message,
        prediction=message.routing_prediction,
        status="failed",
        failure_reason="Integrated Gradients did not converge.",
        words=[],
        passed=None,
    )
    html = page(reviewer_client, message)
    assert "Explanation failed:" in html
    assert "Integrated Gradients did not converge." in html
    body = re.search(r'<div class="message-body"[^>]*>(.*?)</div>', html, re.S).group(1)
    assert "heat-" not in body
    assert "No words are coloured" in html


def test_a_message_without_an_explanation_says_so(reviewer_client):
    html = page(reviewer_client, reviewable_message(explanation=False))
    assert "No explanation was computed for this prediction." in html


def test_the_attention_diagnostic_is_a_collapsed_panel_labelled_as_not_why(reviewer_client):
    html = page(reviewer_client, reviewable_message(attention=True))
    panel = re.search(r'<details class="attention" id="attention-panel">(.*?)</details>', html, re.S).group(1)
    assert "where information flowed inside the model, <strong>not why it decided</strong>" in panel
    assert "Normalisation: softmax over keys per query row" in panel
    assert 'type="application/json"' in panel
    assert "js/review-attention.js" in html


def test_no_attention_panel_without_a_diagnostic(reviewer_client):
    assert "attention-panel" not in page(reviewer_client, reviewable_message())


def test_the_attention_endpoint_returns_one_head_as_json(reviewer_client):
    message = reviewable_message(attention=True)
    url = reverse("reviews:attention", args=[message.pk])
    data = reviewer_client.get(url, {"layer": 1, "head": 1}).json()
    assert data["title"] == "Layer 2, head 2"
    assert len(data["z"]) == len(data["tokens"]) == 7
    assert all(abs(sum(row) - 1) < 0.01 for row in data["z"])
    assert reviewer_client.get(url, {"layer": "rollout"}).status_code == 200
    bad = reviewer_client.get(url, {"layer": 9, "head": 0})
    assert bad.status_code == 400 and "No layer 9" in bad.json()["error"]


def test_the_attention_endpoint_is_404_without_a_diagnostic(reviewer_client):
    message = reviewable_message()
    assert reviewer_client.get(reverse("reviews:attention", args=[message.pk])).status_code == 404


def test_the_decision_form_is_only_offered_to_the_reviewer_holding_the_lock(
    reviewer, reviewer_client, second_reviewer_client
):
    message = reviewable_message()
    assert 'id="decision-form"' not in page(reviewer_client, message)
    assert "Take this message" in page(reviewer_client, message)
    lock_claim(reviewer=reviewer, message=message)
    assert 'id="decision-form"' in page(reviewer_client, message)
    other = page(second_reviewer_client, message)
    assert 'id="decision-form"' not in other
    assert "rita_reviewer is reviewing this message" in other


def test_a_decision_posted_by_the_lock_holder_is_recorded_and_leaves_the_queue(reviewer, reviewer_client):
    message = reviewable_message()
    lock_claim(reviewer=reviewer, message=message)
    response = reviewer_client.post(
        reverse("reviews:decide", args=[message.pk]),
        {"verdict": "claim", "claim_type": "risk_free", "note": "Says capital cannot be lost."},
    )
    assert response.status_code == 302 and response["Location"] == reverse("reviews:queue")
    decision = ReviewDecision.objects.get(message=message)
    assert (decision.verdict, decision.claim_type.code, decision.note) == (
        "claim",
        "risk_free",
        "Says capital cannot be lost.",
    )
    assert (
        f'data-message-id="{message.pk}"'
        not in reviewer_client.get(reverse("reviews:queue")).content.decode()
    )


def test_a_claim_without_a_claim_type_is_refused_with_the_reason(reviewer, reviewer_client):
    message = reviewable_message()
    lock_claim(reviewer=reviewer, message=message)
    response = reviewer_client.post(reverse("reviews:decide", args=[message.pk]), {"verdict": "claim"})
    assert response.status_code == 400
    assert "Choose the claim type of this claim." in response.content.decode()
    assert not ReviewDecision.objects.exists()


def test_a_decision_without_the_lock_is_refused_with_409(reviewer_client):
    message = reviewable_message()
    response = reviewer_client.post(reverse("reviews:decide", args=[message.pk]), {"verdict": "no_claim"})
    assert response.status_code == 409
    assert "You have not claimed this message" in response.content.decode()
    assert not ReviewDecision.objects.exists()


def test_a_resubmitted_decision_is_not_written_twice(reviewer, reviewer_client):
    message = reviewable_message()
    lock_claim(reviewer=reviewer, message=message)
    url = reverse("reviews:decide", args=[message.pk])
    reviewer_client.post(url, {"verdict": "no_claim"})
    again = reviewer_client.post(url, {"verdict": "no_claim"}, follow=True)
    assert "already been decided; nothing was recorded" in again.content.decode()
    assert ReviewDecision.objects.filter(message=message).count() == 1


def test_an_escalation_through_the_page_needs_a_reason_and_reaches_the_admin_queue(
    reviewer, reviewer_client, admin_client_
):
    message = reviewable_message()
    lock_claim(reviewer=reviewer, message=message)
    url = reverse("reviews:decide", args=[message.pk])
    assert reviewer_client.post(url, {"verdict": "escalate"}).status_code == 400
    reviewer_client.post(url, {"verdict": "escalate", "escalation_reason": "Looks like a forecast, unsure."})
    listing = admin_client_.get(reverse("reviews:escalations")).content.decode()
    assert message.external_id in listing
    assert "Looks like a forecast, unsure." in listing


def test_an_admin_decides_an_escalation_on_its_page(reviewer, admin_client_):
    escalation = ReviewDecisionFactory(reviewer=reviewer, verdict="escalate")
    html = page(admin_client_, escalation.message)
    assert "Second-level decision" in html
    response = admin_client_.post(
        reverse("reviews:second_level", args=[escalation.message.pk]), {"verdict": "no_claim"}
    )
    assert response.status_code == 302
    latest = ReviewDecision.objects.get(sequence=escalation.sequence + 1)
    assert latest.is_second_level and latest.verdict == "no_claim"


@pytest.mark.parametrize("status", ["decided", "in_review", "received"])
def test_a_second_level_decision_on_a_message_not_escalated_is_refused_with_400(
    status, reviewer, admin_client_
):
    # given a message that is decided, waiting in the queue, or not scored yet
    if status == "decided":
        message = ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim").message
    elif status == "in_review":
        message = reviewable_message()
    else:
        message = MessageFactory()
    recorded = ReviewDecision.objects.count()

    # when a compliance admin posts a second-level decision on it
    response = admin_client_.post(reverse("reviews:second_level", args=[message.pk]), {"verdict": "no_claim"})

    # then it is refused like the other decisions in a wrong state, with the reason on the page
    assert response.status_code == 400
    assert "not escalated: a second-level decision is taken only on an escalated message" in (
        response.content.decode()
    )
    assert ReviewDecision.objects.count() == recorded


def test_an_admin_records_a_correction_with_a_reason(reviewer, admin_client_):
    first = ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim")
    url = reverse("reviews:correct", args=[first.message.pk])
    missing_reason = admin_client_.post(url, {"verdict": "no_claim", "supersedes": first.pk})
    assert missing_reason.status_code == 400
    admin_client_.post(
        url,
        {
            "verdict": "claim",
            "claim_type": "guaranteed_returns",
            "supersedes": first.pk,
            "supersede_reason": "Missed it.",
        },
    )
    correction = ReviewDecision.objects.get(supersedes=first)
    assert correction.supersede_reason == "Missed it."


def test_a_correction_offers_no_escalation_and_refuses_one_posted(reviewer, admin_client_):
    first = ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim")
    page = admin_client_.get(reverse("reviews:message", args=[first.message.pk]))
    form = page.context["correction_form"]
    refused = admin_client_.post(
        reverse("reviews:correct", args=[first.message.pk]),
        {
            "verdict": "escalate",
            "escalation_reason": "back to the admins",
            "supersedes": first.pk,
            "supersede_reason": "second thoughts",
        },
    )

    assert [value for value, _ in form.fields["verdict"].choices] == ["claim", "no_claim"]
    assert "escalation_reason" not in form.fields
    assert refused.status_code == 400
    assert ReviewDecision.objects.filter(message=first.message).count() == 1


def test_an_invalid_escalation_reason_gets_its_own_error_only(reviewer, client):
    message = reviewable_message()
    lock_claim(reviewer=reviewer, message=message)
    client.force_login(reviewer)

    response = client.post(
        reverse("reviews:decide", args=[message.pk]), {"verdict": "escalate", "escalation_reason": "x" * 5000}
    )

    errors = response.context["decision_form"].errors["escalation_reason"]
    assert response.status_code == 400
    assert len(errors) == 1 and "Say why" not in errors[0]
    assert not ReviewDecision.objects.filter(message=message).exists()


def test_the_escalation_queue_makes_the_same_number_of_queries_for_1_or_10_escalations(
    reviewer, admin_client_
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert admin_client_.get(reverse("reviews:escalations")).status_code == 200
        return len(ctx.captured_queries)

    ReviewDecisionFactory(reviewer=reviewer, verdict="escalate")
    small = count()
    for _ in range(9):
        ReviewDecisionFactory(reviewer=reviewer, verdict="escalate")
    assert count() == small


def test_the_escalation_queue_is_paged_with_a_keyset_cursor(reviewer, admin_client_, monkeypatch):
    import reviews.views.records as records_view
    from reviews.selectors import escalations_page

    monkeypatch.setattr(
        records_view, "escalations_page", lambda qs, cursor: escalations_page(qs, cursor=cursor, size=2)
    )
    escalated = [ReviewDecisionFactory(reviewer=reviewer, verdict="escalate").message for _ in range(5)]
    seen, href, pages = [], "", 0
    while href is not None:
        response = admin_client_.get(reverse("reviews:escalations") + href)
        assert response.status_code == 200
        html = response.content.decode()
        seen += [m.external_id for m in escalated if m.external_id in html]
        match = re.search(r'href="(\?cursor=[^"]+)" rel="next"', html)
        href = match.group(1).replace("&amp;", "&") if match else None
        pages += 1
    assert pages == 3 and sorted(seen) == sorted(m.external_id for m in escalated)  # each once
    broken = admin_client_.get(reverse("reviews:escalations") + "?cursor=not-a-cursor")
    assert broken.status_code == 400 and "start again from the first page" in broken.content.decode()


@pytest.mark.parametrize(
    ("supersedes", "says"),
    [
        (None, "The form does not say which decision it corrects"),
        ("999999", "The decision this corrects does not exist"),
    ],
)
def test_a_correction_without_the_decision_it_corrects_says_so(supersedes, says, reviewer, admin_client_):
    # given a decided message, and a correction whose hidden field is missing or names no decision
    first = ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim")
    post = {"verdict": "no_claim", "supersede_reason": "Missed it."}
    if supersedes is not None:
        post["supersedes"] = supersedes

    # when it is sent
    response = admin_client_.post(reverse("reviews:correct", args=[first.message.pk]), post)

    # then it is refused and the page names what is wrong, in an alert
    html = response.content.decode()
    assert response.status_code == 400
    assert re.search(rf'<div class="error" role="alert"><p>{says}[^<]*reload the page', html)
    assert not ReviewDecision.objects.filter(supersedes=first).exists()


def test_the_message_page_and_its_refusals_are_never_cached(reviewer, client):
    """Back after a decision fetches the page again (decided), not the stale form from the cache."""
    message = reviewable_message()
    lock_claim(reviewer=reviewer, message=message)
    client.force_login(reviewer)

    page = client.get(reverse("reviews:message", args=[message.pk]))
    refused = client.post(reverse("reviews:decide", args=[message.pk]), {"verdict": "claim"})

    assert refused.status_code == 400
    for response in (page, refused):
        assert "no-store" in response["Cache-Control"]
