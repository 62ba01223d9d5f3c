"""Blind double review: a deterministic sample of decided messages goes back to the review queue
for a second, different reviewer, and a disagreement goes to a compliance admin.

These are services of the reviews app, kept apart from services.py (the queue and the decision
record) so that each stays small; the decision service calls `double_review_after_decision` inside
its transaction, so every way of recording a decision (page, replay, tests) follows the same rules.

Rules, in one place:
- **Which decisions are drawn.** A first-level decision of claim or not a claim, taken on a message
  in review that was not already drawn (not an escalation, a correction, a second-level decision or
  a second review). Its claim type is the reviewer's (a claim), else the model's predicted type when
  the model flagged the message, else none. A `DoubleReviewRule` for that claim type (data, edited
  by compliance admins) sets the rate; `DOUBLE_REVIEW_RATE` (default 5 %) otherwise.
- **The draw is deterministic**: sha256 of a secret salt and the message id against the rate (the
  QA sample's draw, scoring.routing.is_qa_sample), so a retried transaction draws the same, and a
  reviewer who does not know SECRET_KEY cannot tell which decisions will be checked.
- **A drawn message goes back in review** (decided -> in_review) in the first decision's
  transaction, with its original priority.
- **The second reviewer is anybody but the first**: "Review next" skips a message the reviewer has
  decided, and claiming or deciding it is refused (reviews.services). A reviewer reads only their
  own decisions, on the page and in the API (reviews.selectors.decisions_visible_to), so the second
  reviewer sees neither the first decision nor who made it.
- **Agreement** = same verdict and, for a claim, the same claim type. Agreed: the message stays
  decided. Disagreed: it moves to escalated, where a compliance admin sees both decisions side by
  side; the admin's second-level decision is final and is linked here. A second reviewer who
  escalates sends it to the admin the same way (outcome "escalated").
- All three decisions are ordinary records of the hash chain; this module never hashes anything.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from reviews.models import (
    DoubleReview,
    DoubleReviewOutcome,
    DoubleReviewReason,
    DoubleReviewRule,
    ReviewDecision,
    Verdict,
)
from scoring.constants import MessageStatus
from scoring.models import Message
from scoring.routing import is_qa_sample
from scoring.services.transitions import message_transition

SALT_PREFIX = "double-review"
DRAWN_VERDICTS = (Verdict.CLAIM, Verdict.NO_CLAIM)


def decision_claim_type_id(decision: ReviewDecision) -> int | None:
    """The claim type a decision is about: the reviewer's for a claim, else the model's predicted
    type when the model flagged the message, else None."""
    if decision.verdict == Verdict.CLAIM:
        return decision.claim_type_id
    return decision.model_claim_type_id if decision.model_flagged else None


def double_review_rate(claim_type_id: int | None) -> tuple[float, str]:
    """(rate, reason) for a decision of this claim type: its rule's rate, else the setting's."""
    if claim_type_id is not None:
        rule = DoubleReviewRule.objects.filter(claim_type_id=claim_type_id).only("rate").first()
        if rule is not None:
            return rule.rate, DoubleReviewReason.CLAIM_TYPE_RULE
    return settings.DOUBLE_REVIEW_RATE, DoubleReviewReason.RATE


def is_drawn(message_id: int, rate: float) -> bool:
    """The deterministic draw for one message at `rate` (see the module docstring)."""
    return is_qa_sample(str(message_id), rate=rate, salt=f"{SALT_PREFIX}:{settings.SECRET_KEY}")


def decisions_agree(first: ReviewDecision, second: ReviewDecision) -> bool:
    """Same verdict and, when both say claim, the same claim type."""
    return first.verdict == second.verdict and (
        first.verdict != Verdict.CLAIM or first.claim_type_id == second.claim_type_id
    )


def _draw(*, decision: ReviewDecision, message: Message) -> DoubleReview | None:
    if decision.verdict not in DRAWN_VERDICTS or DoubleReview.objects.filter(message=message).exists():
        return None
    claim_type_id = decision_claim_type_id(decision)
    rate, reason = double_review_rate(claim_type_id)
    if not is_drawn(message.pk, rate):
        return None
    review = DoubleReview.objects.create(
        message=message,
        first_decision=decision,
        claim_type_id=claim_type_id,
        reason=reason,
        rate=rate,
        sampled_at=decision.created_at,
    )
    message_transition(message=message, to_status=MessageStatus.IN_REVIEW, from_statuses=[message.status])
    return review


def _second_review(*, review: DoubleReview, decision: ReviewDecision, message: Message) -> DoubleReview:
    if decision.verdict == Verdict.ESCALATE:
        outcome = DoubleReviewOutcome.ESCALATED  # the decision service moved it to escalated
    elif decisions_agree(review.first_decision, decision):
        outcome = DoubleReviewOutcome.AGREED
    else:
        outcome = DoubleReviewOutcome.DISAGREED
        message_transition(
            message=message, to_status=MessageStatus.ESCALATED, from_statuses=[MessageStatus.DECIDED]
        )
    review.second_decision = decision
    review.second_at = decision.created_at
    review.outcome = outcome
    review.save(update_fields=["second_decision", "second_at", "outcome"])
    return review


def double_review_after_decision(
    *, decision: ReviewDecision, message: Message, from_status: str
) -> DoubleReview | None:
    """What a just-recorded decision means for double review; called by `decision_record` in its
    transaction, after the message moved. Returns the DoubleReview row it created or updated.

    Promises: a first decision drawn by the sample puts the message back in review; a second
    review is compared with the first and a disagreement moves the message to escalated; a
    compliance admin's second-level decision on such an escalation is linked as the final one.
    Anything else is left alone."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("double_review_after_decision runs inside the decision's transaction.")
    if decision.is_second_level:
        review = (
            DoubleReview.objects.select_for_update()
            .filter(
                message=message,
                final_decision__isnull=True,
                outcome__in=[DoubleReviewOutcome.DISAGREED, DoubleReviewOutcome.ESCALATED],
            )
            .first()
        )
        if review is not None and decision.supersedes_id is None:
            review.final_decision = decision
            review.final_at = decision.created_at
            review.save(update_fields=["final_decision", "final_at"])
        return review
    if decision.supersedes_id is not None or from_status != MessageStatus.IN_REVIEW:
        return None
    pending = (
        DoubleReview.objects.select_for_update()
        .select_related("first_decision")
        .filter(message=message, outcome=DoubleReviewOutcome.PENDING)
        .first()
    )
    if pending is not None:
        return _second_review(review=pending, decision=decision, message=message)
    return _draw(decision=decision, message=message)
