"""Blind double review (issue 19): a deterministic sample of decided messages goes back to the
queue for a second, different reviewer who sees neither the first decision nor who made it; a
disagreement goes to a compliance admin, whose decision is final; every decision is in the chain."""

from __future__ import annotations

import pytest
from django.urls import reverse

from reviews.double_review import is_drawn
from reviews.errors import NotPermitted
from reviews.models import DecisionTiming, DoubleReview, DoubleReviewRule, ReviewDecision
from reviews.selectors import audit_chain_report
from reviews.services import decision_record, lock_claim, lock_claim_next
from scoring.constants import MessageStatus
from scoring.models import Message
from tests.factories import ReviewDecisionFactory, claim_type, reviewable_message

pytestmark = pytest.mark.django_db

FIRST_NOTE = "the first reviewer's reasons, which the second must not read"


@pytest.fixture
def always(settings):
    settings.DOUBLE_REVIEW_RATE = 1.0


def first_review(reviewer, *, verdict="claim", code="guaranteed_returns", note=FIRST_NOTE, **message_fields):
    message = reviewable_message(**message_fields)
    ReviewDecisionFactory(
        message=message,
        reviewer=reviewer,
        verdict=verdict,
        claim_type=claim_type(code) if verdict == "claim" else None,
        note=note,
    )
    message.refresh_from_db()
    return message


def second_review(message, reviewer, *, verdict="claim", code="guaranteed_returns"):
    assert lock_claim_next(reviewer=reviewer) == message
    return decision_record(
        message=message,
        reviewer=reviewer,
        verdict=verdict,
        claim_type=claim_type(code) if verdict == "claim" else None,
    )


def test_the_draw_is_deterministic_follows_the_rate_and_depends_on_the_secret(settings):
    ids = range(1, 20_001)

    drawn = [i for i in ids if is_drawn(i, 0.05)]

    assert drawn == [i for i in ids if is_drawn(i, 0.05)]  # same ids, same answer
    assert 0.045 < len(drawn) / len(ids) < 0.055
    assert not any(is_drawn(i, 0.0) for i in ids[:1000])
    assert all(is_drawn(i, 1.0) for i in ids[:1000])
    assert set(drawn) > {i for i in ids if is_drawn(i, 0.01)}  # a lower rate draws a subset
    settings.SECRET_KEY = "another secret"
    assert drawn != [i for i in ids if is_drawn(i, 0.05)]


def test_the_same_messages_are_drawn_whoever_decides_them(settings, reviewer, second_reviewer):
    settings.DOUBLE_REVIEW_RATE = 0.5
    messages = [reviewable_message() for _ in range(12)]
    expected = {m.pk for m in messages if is_drawn(m.pk, 0.5)}

    for index, message in enumerate(messages):
        ReviewDecisionFactory(message=message, reviewer=(reviewer, second_reviewer)[index % 2])

    assert set(DoubleReview.objects.values_list("message_id", flat=True)) == expected
    assert 0 < len(expected) < 12
    in_review = Message.objects.filter(status=MessageStatus.IN_REVIEW).values_list("pk", flat=True)
    assert set(in_review) == expected


def test_a_drawn_message_goes_back_to_the_queue_for_another_reviewer_only(always, reviewer, second_reviewer):
    message = first_review(reviewer)

    assert message.status == MessageStatus.IN_REVIEW
    review = DoubleReview.objects.get(message=message)
    assert (review.outcome, review.reason, review.rate) == ("pending", "rate", 1.0)
    assert lock_claim_next(reviewer=reviewer) is None
    with pytest.raises(NotPermitted, match="another reviewer"):
        lock_claim(reviewer=reviewer, message=message)
    assert lock_claim_next(reviewer=second_reviewer) == message


def test_a_claim_type_rule_replaces_the_rate_for_its_type(settings, reviewer):
    settings.DOUBLE_REVIEW_RATE = 0.0
    DoubleReviewRule.objects.create(claim_type=claim_type("regulatory_endorsement"), rate=1.0)

    endorsed = first_review(reviewer, code="regulatory_endorsement")
    other = first_review(reviewer, code="guaranteed_returns")
    # a "not a claim" on a message the model flagged as an endorsement is about an endorsement too
    dismissed = first_review(reviewer, verdict="no_claim", claim_code="regulatory_endorsement")

    assert endorsed.status == dismissed.status == MessageStatus.IN_REVIEW
    assert other.status == MessageStatus.DECIDED
    assert DoubleReview.objects.get(message=endorsed).reason == "claim_type_rule"


def test_an_escalation_is_not_drawn(always, reviewer):
    escalated = first_review(reviewer, verdict="escalate")
    assert escalated.status == MessageStatus.ESCALATED
    assert not DoubleReview.objects.exists()


def test_the_second_reviewer_sees_neither_the_first_decision_nor_who_made_it(
    always, reviewer, second_reviewer, second_reviewer_client
):
    message = first_review(reviewer)
    lock_claim(reviewer=second_reviewer, message=message)

    page = second_reviewer_client.get(reverse("reviews:message", args=[message.pk]))
    api = second_reviewer_client.get(reverse("api-message-detail", args=[message.pk]))

    assert page.status_code == api.status_code == 200
    html = page.content.decode()
    assert 'id="decision-form"' in html  # the page is the ordinary review page
    for secret in (FIRST_NOTE, "rita_reviewer", "Decisions on this message", "Guaranteed returns</td>"):
        assert secret not in html
    assert api.json()["decisions"] == []
    assert "rita_reviewer" not in api.content.decode() and FIRST_NOTE not in api.content.decode()


def test_the_first_reviewer_cannot_decide_the_second_review(always, reviewer):
    message = first_review(reviewer)

    with pytest.raises(NotPermitted, match="another reviewer"):
        decision_record(message=message, reviewer=reviewer, verdict="no_claim")
    assert ReviewDecision.objects.filter(message=message).count() == 1


def test_two_agreeing_reviews_leave_the_message_decided(always, reviewer, second_reviewer):
    message = first_review(reviewer)

    second_review(message, second_reviewer)

    message.refresh_from_db()
    assert message.status == MessageStatus.DECIDED
    review = DoubleReview.objects.get(message=message)
    assert review.outcome == "agreed" and review.second_decision.reviewer == second_reviewer


def test_another_claim_type_is_a_disagreement(always, reviewer, second_reviewer):
    message = first_review(reviewer, code="guaranteed_returns")

    second_review(message, second_reviewer, code="risk_free")

    message.refresh_from_db()
    assert message.status == MessageStatus.ESCALATED
    assert DoubleReview.objects.get(message=message).outcome == "disagreed"


def test_a_disagreement_goes_to_the_admin_side_by_side_whose_decision_is_final_and_chained(
    always, reviewer, second_reviewer, admin_client_
):
    message = first_review(reviewer, verdict="claim")
    second = second_review(message, second_reviewer, verdict="no_claim")

    queue = admin_client_.get(reverse("reviews:escalations")).content.decode()
    assert "The two reviewers disagree." in queue
    assert "rita_reviewer" in queue and "rob_reviewer" in queue
    assert "Claim: Guaranteed returns" in queue and "Not a claim" in queue
    page = admin_client_.get(reverse("reviews:message", args=[message.pk])).content.decode()
    assert 'id="double-review"' in page and "Your decision is final." in page

    response = admin_client_.post(
        reverse("reviews:second_level", args=[message.pk]),
        {"verdict": "claim", "claim_type": "guaranteed_returns", "note": "it promises"},
    )

    assert response.status_code == 302
    message.refresh_from_db()
    assert message.status == MessageStatus.DECIDED
    review = DoubleReview.objects.select_related("first_decision", "final_decision").get(message=message)
    assert review.second_decision == second
    assert review.final_decision.is_second_level and review.final_decision.verdict == "claim"
    chain = list(ReviewDecision.objects.filter(message=message).order_by("sequence"))
    assert chain == [review.first_decision, second, review.final_decision]
    report = audit_chain_report()
    assert report.intact and report.count == 3


def test_the_time_from_claim_to_decision_is_kept_for_live_decisions(reviewer):
    decision = ReviewDecisionFactory(reviewer=reviewer)

    timing = DecisionTiming.objects.get(decision=decision)
    assert 0 <= timing.seconds < 60 and timing.claimed_at <= decision.created_at


def test_a_compliance_admin_sets_a_claim_types_rate_in_the_admin_and_a_reviewer_cannot(admin_user, reviewer):
    from tests.reviews.conftest import signed_in

    admin_user.is_staff = reviewer.is_staff = True
    admin_user.save()
    reviewer.save()
    add = reverse("admin:reviews_doublereviewrule_add")
    data = {"claim_type": claim_type("regulatory_endorsement").pk, "rate": "1", "note": "every endorsement"}

    assert signed_in(reviewer).post(add, data).status_code == 403
    assert signed_in(admin_user).post(add, data).status_code == 302
    assert DoubleReviewRule.objects.get().rate == 1.0
    assert signed_in(admin_user).post(add, {**data, "rate": "1.5"}).status_code == 200  # refused: 0 to 1
    assert DoubleReviewRule.objects.count() == 1
