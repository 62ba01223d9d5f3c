"""Writes of the reviews app: claiming queue messages with time-limited locks, and recording
decisions in the append-only, hash-chained audit trail.

Rules, in one place:
- A reviewer works on one message at a time. "Review next" gives back the message the reviewer
  already holds a live lock on; otherwise it claims the highest-priority message in review that
  has no live lock. Claiming is atomic (a unique lock row per message; on PostgreSQL the
  candidate row is also taken FOR UPDATE SKIP LOCKED), so two reviewers never get the same one.
- A first-level decision (claim, not a claim, escalate) needs the reviewer role, a message in
  review and the reviewer's lock row on it. A lock that has expired still counts as long as
  nobody else has claimed the message since (claiming replaces the row), so slow work is not
  lost and two reviewers still cannot both decide.
- An escalated message is decided (claim or not a claim) by a compliance admin: a second-level
  decision, no lock needed; the status guard makes a second submission fail.
- A message in review that the reviewer has decided (drawn for a blind second review,
  reviews.double_review) is for another reviewer: "Review next" skips it, claiming and deciding
  it are refused.
- A decided message takes no further decision except a correction: a new record that
  supersedes the latest one, with a reason, by a compliance admin or the original reviewer
  (this service allows both; the message page offers the correction to compliance admins only).
- Every append takes the chain lock (pg_advisory_xact_lock on PostgreSQL; SQLite serialises
  writers), so sequence numbers and previous hashes never fork.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from core.db import skip_locked
from core.roles import Role, has_role
from reviews.constants import CHAIN_ADVISORY_LOCK_KEY, CLAIM_ATTEMPTS, NOTE_MAX_LENGTH, REASON_MAX_LENGTH
from reviews.double_review import double_review_after_decision
from reviews.errors import (
    AlreadyDecided,
    DecisionInvalid,
    LockHeldByOther,
    LockNotHeld,
    NotPermitted,
)
from reviews.hashing import GENESIS_HASH, record_hash
from reviews.models import DecisionTiming, ReviewDecision, ReviewLock, Verdict
from reviews.selectors import decision_snapshot, in_priority_order, lock_held
from scoring.constants import MessageStatus
from scoring.models import ClaimType, Message
from scoring.services.transitions import message_transition


def _refuse_own_second_review(*, reviewer: User, message: Message) -> None:
    """A message in review that the reviewer has decided is waiting for a blind second review by
    somebody else (reviews.double_review)."""
    if ReviewDecision.objects.filter(message=message, reviewer=reviewer).exists():
        raise NotPermitted(
            f"You have decided message {message.external_id} already; its blind second review is "
            "for another reviewer."
        )


def _lock_expiry():
    return timezone.now() + timedelta(minutes=settings.REVIEW_LOCK_MINUTES)


def _require_reviewer(user: User) -> None:
    if not has_role(user, Role.REVIEWER):
        raise NotPermitted("Only reviewers can claim and decide messages in the review queue.")


def _try_lock(*, reviewer: User, message_id: int) -> ReviewLock | None:
    """Insert the lock row for a message after clearing an expired one; None if someone else
    holds a live lock (the unique constraint on the message decides a race)."""
    now = timezone.now()
    ReviewLock.objects.filter(message_id=message_id, expires_at__lte=now).exclude(reviewer=reviewer).delete()
    try:
        with transaction.atomic():
            lock, _ = ReviewLock.objects.update_or_create(
                message_id=message_id,
                reviewer=reviewer,
                defaults={"expires_at": _lock_expiry(), "locked_at": now},
            )
    except IntegrityError:
        return None
    # One message at a time: drop whatever else this reviewer still held.
    ReviewLock.objects.filter(reviewer=reviewer).exclude(message_id=message_id).delete()
    return lock


def lock_claim_next(*, reviewer: User) -> Message | None:
    """Claim the top unclaimed message in review for `reviewer` (or return the one they already
    hold). Returns None when every message in review is claimed by someone else."""
    _require_reviewer(reviewer)
    with transaction.atomic():
        held = lock_held(reviewer)
        if held is not None:
            return held.message
        for _ in range(CLAIM_ATTEMPTS):
            now = timezone.now()
            candidates = in_priority_order(
                Message.objects.filter(status=MessageStatus.IN_REVIEW)
                .exclude(review_lock__expires_at__gt=now)
                # a message this reviewer decided waits for somebody else's blind second review
                .exclude(decisions__reviewer=reviewer)
            )
            message = skip_locked(candidates).only("id").first()
            if message is None:
                return None
            if _try_lock(reviewer=reviewer, message_id=message.pk) is not None:
                return Message.objects.get(pk=message.pk)
    return None


def lock_claim(*, reviewer: User, message: Message) -> ReviewLock:
    """Claim one particular message in review (from the queue list). Raises LockHeldByOther
    when another reviewer holds a live lock on it."""
    _require_reviewer(reviewer)
    with transaction.atomic():
        message = Message.objects.select_for_update().get(pk=message.pk)
        if message.status != MessageStatus.IN_REVIEW:
            raise DecisionInvalid(
                f"Message {message.external_id} is {message.get_status_display()}, not in review."
            )
        _refuse_own_second_review(reviewer=reviewer, message=message)
        lock = _try_lock(reviewer=reviewer, message_id=message.pk)
        if lock is None:
            other = ReviewLock.objects.select_related("reviewer").get(message=message)
            raise LockHeldByOther(
                f"{other.reviewer.username} is reviewing this message until {other.expires_at:%H:%M} UTC."
            )
        return lock


def lock_release(*, reviewer: User, message: Message) -> None:
    """Give a claimed message back to the queue without deciding it."""
    deleted, _ = ReviewLock.objects.filter(reviewer=reviewer, message=message).delete()
    if not deleted:
        raise LockNotHeld("You do not hold this message, so there is nothing to release.")


def _chain_lock() -> None:
    """Serialise appends to the audit chain for the rest of the transaction."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_ADVISORY_LOCK_KEY])
    # SQLite: the connection opens transactions with BEGIN IMMEDIATE (settings), so writers queue.


def _validate(
    *,
    verdict: Verdict,
    claim_type: ClaimType | None,
    note: str,
    escalation_reason: str,
    supersedes: ReviewDecision | None,
    supersede_reason: str,
) -> None:
    if verdict == Verdict.CLAIM and claim_type is None:
        raise DecisionInvalid("A claim needs its claim type.")
    if verdict != Verdict.CLAIM and claim_type is not None:
        raise DecisionInvalid("A claim type is recorded only with a claim verdict.")
    if verdict == Verdict.ESCALATE and not escalation_reason.strip():
        raise DecisionInvalid("An escalation needs a reason for the compliance admin.")
    if verdict != Verdict.ESCALATE and escalation_reason.strip():
        raise DecisionInvalid("An escalation reason is recorded only with an escalation.")
    if supersedes is not None and not supersede_reason.strip():
        raise DecisionInvalid("A correction needs a reason.")
    if supersedes is not None and supersedes.is_second_level and verdict == Verdict.ESCALATE:
        raise DecisionInvalid(
            f"Decision #{supersedes.sequence} is a compliance admin's, which is final: a correction "
            "of it decides (claim or not a claim) and cannot escalate the message again."
        )
    if supersedes is None and supersede_reason.strip():
        raise DecisionInvalid("A correction reason needs the decision it corrects.")
    if len(note) > NOTE_MAX_LENGTH:
        raise DecisionInvalid(f"The note is longer than {NOTE_MAX_LENGTH} characters.")
    if max(len(escalation_reason), len(supersede_reason)) > REASON_MAX_LENGTH:
        raise DecisionInvalid(f"A reason is longer than {REASON_MAX_LENGTH} characters.")


def _target_status(
    *, message: Message, reviewer: User, verdict: Verdict, supersedes: ReviewDecision | None
) -> tuple[str, bool]:
    """(status after the decision, is_second_level), or a domain error for a wrong state."""
    escalate_to = MessageStatus.ESCALATED if verdict == Verdict.ESCALATE else MessageStatus.DECIDED
    if supersedes is not None:
        latest = ReviewDecision.objects.filter(message=message).order_by("-sequence").first()
        if supersedes.message_id != message.pk:
            raise DecisionInvalid("A correction must supersede a decision on the same message.")
        if latest is None or latest.pk != supersedes.pk:
            raise DecisionInvalid(
                f"Decision #{supersedes.sequence} is no longer the latest on this message; "
                "correct the latest one."
            )
        is_admin = has_role(reviewer, Role.COMPLIANCE_ADMIN)
        if not (is_admin or (supersedes.reviewer_id == reviewer.pk and has_role(reviewer, Role.REVIEWER))):
            raise NotPermitted("Only a compliance admin or the original reviewer can correct a decision.")
        if message.status != MessageStatus.DECIDED:
            raise DecisionInvalid("Only a decided message takes a correction.")
        return escalate_to, is_admin
    if message.status == MessageStatus.IN_REVIEW:
        _require_reviewer(reviewer)
        _refuse_own_second_review(reviewer=reviewer, message=message)
        if not ReviewLock.objects.filter(message=message, reviewer=reviewer).exists():
            raise LockNotHeld(
                "You have not claimed this message (or another reviewer has claimed it since your "
                "lock expired). Take it from the queue first."
            )
        return escalate_to, False
    if message.status == MessageStatus.ESCALATED:
        if not has_role(reviewer, Role.COMPLIANCE_ADMIN):
            raise NotPermitted("Escalated messages are decided by a compliance admin.")
        if verdict == Verdict.ESCALATE:
            raise DecisionInvalid("An escalated message is decided as a claim or not a claim.")
        return MessageStatus.DECIDED, True
    if message.status == MessageStatus.DECIDED:
        raise AlreadyDecided(
            f"Message {message.external_id} has already been decided; nothing was recorded. "
            "A change is a correction that supersedes the decision, with a reason."
        )
    raise DecisionInvalid(
        f"Message {message.external_id} is {message.get_status_display()}, not awaiting review."
    )


def _replay_time(decided_at: datetime, head: dict | None) -> datetime:
    if timezone.is_naive(decided_at):
        raise DecisionInvalid("A replayed decision time needs a time zone.")
    if decided_at > timezone.now():
        raise DecisionInvalid(f"A replayed decision cannot be in the future ({decided_at.isoformat()}).")
    if head is not None and decided_at < head["created_at"]:
        raise DecisionInvalid(
            f"A replayed decision ({decided_at.isoformat()}) cannot precede the newest record of the "
            f"audit chain ({head['created_at'].isoformat()}): the chain is in time order."
        )
    return decided_at


def decision_agreement(
    *, verdict: str, model_flagged: bool | None, claim_type_id: int | None, model_claim_type_id: int | None
) -> tuple[bool | None, bool | None]:
    """(agrees_with_model, claim_type_matches): the model "says claim" when it flagged the
    message. No agreement for an escalation or without a prediction; the claim type is compared
    only when both say claim."""
    agrees = None
    if verdict != Verdict.ESCALATE and model_flagged is not None:
        agrees = model_flagged == (verdict == Verdict.CLAIM)
    type_matches = None
    if verdict == Verdict.CLAIM and model_flagged and model_claim_type_id is not None:
        type_matches = claim_type_id == model_claim_type_id
    return agrees, type_matches


def decision_record(
    *,
    message: Message,
    reviewer: User,
    verdict: str,
    claim_type: ClaimType | None = None,
    note: str = "",
    escalation_reason: str = "",
    supersedes: ReviewDecision | None = None,
    supersede_reason: str = "",
    decided_at: datetime | None = None,
) -> ReviewDecision:
    """Record a decision and move the message on, atomically.

    Promises: the record holds a snapshot of the evidence judged (model version, score, threshold,
    predicted claim type, rule matches, explanation and its verdict, QA flag) and the derived
    agreement with the model; it is appended at the head of the hash chain; the message moves
    in_review -> decided/escalated (escalated -> decided for a second-level decision; a reviewer's
    correction of their own decision to an escalation moves decided -> escalated, while a compliance
    admin's decision, which is final, is corrected only by deciding); the lock on the message is
    released; the time from claim to decision is kept (DecisionTiming); blind double review follows
    (reviews.double_review: a drawn decision puts the message back in review, a second review that
    disagrees moves it to escalated). A duplicate submission raises AlreadyDecided and writes
    nothing.
    Raises a ReviewError subclass, with a message for the user, for any rule it refuses.

    `decided_at` is for replaying simulated history only (`simulate_traffic`); views never pass
    it. The record is then stamped with that instant instead of now; it must not be in the
    future nor before the newest record of the chain, so the chain stays in time order. (The
    message's own status timestamps are still the wall-clock time of the transition.)"""
    try:
        verdict = Verdict(verdict)
    except ValueError as exc:
        raise DecisionInvalid(f"{verdict!r} is not a verdict (claim, no_claim or escalate).") from exc
    _validate(
        verdict=verdict,
        claim_type=claim_type,
        note=note,
        escalation_reason=escalation_reason,
        supersedes=supersedes,
        supersede_reason=supersede_reason,
    )
    with transaction.atomic():
        _chain_lock()
        message = (
            Message.objects.select_for_update(of=("self",))
            .select_related("routing_prediction__model_version", "routing_prediction__claim_type")
            .get(pk=message.pk)
        )
        if supersedes is not None:
            supersedes = ReviewDecision.objects.get(pk=supersedes.pk)
        to_status, second_level = _target_status(
            message=message, reviewer=reviewer, verdict=verdict, supersedes=supersedes
        )
        prediction = message.routing_prediction
        model_flagged = prediction.flagged if prediction is not None else None
        agrees, type_matches = decision_agreement(
            verdict=verdict,
            model_flagged=model_flagged,
            claim_type_id=claim_type.pk if claim_type else None,
            model_claim_type_id=prediction.claim_type_id if prediction else None,
        )
        head = (
            ReviewDecision.objects.order_by("-sequence")
            .values("sequence", "content_hash", "created_at")
            .first()
        )
        created_at = _replay_time(decided_at, head) if decided_at is not None else timezone.now()
        decision = ReviewDecision(
            sequence=(head["sequence"] + 1) if head else 1,
            previous_hash=head["content_hash"] if head else GENESIS_HASH,
            message=message,
            reviewer=reviewer,
            verdict=verdict.value,
            claim_type=claim_type,
            note=note,
            escalation_reason=escalation_reason,
            supersedes=supersedes,
            supersede_reason=supersede_reason,
            is_second_level=second_level,
            snapshot=decision_snapshot(message, reviewer=reviewer, claim_type=claim_type),
            model_version_id=prediction.model_version_id if prediction else None,
            model_score=prediction.score if prediction else None,
            model_threshold=prediction.threshold if prediction else None,
            model_flagged=model_flagged,
            model_claim_type_id=prediction.claim_type_id if prediction else None,
            is_qa_sample=message.is_qa_sample,
            agrees_with_model=agrees,
            claim_type_matches=type_matches,
            created_at=created_at,
        )
        decision.content_hash = record_hash(decision)
        decision.save(force_insert=True)
        from_status = message.status
        if to_status != message.status:
            message_transition(message=message, to_status=to_status, from_statuses=[message.status])
        claimed_at = (
            ReviewLock.objects.filter(message=message, reviewer=reviewer)
            .values_list("locked_at", flat=True)
            .first()
        )
        if claimed_at is not None and decided_at is None and not second_level:
            DecisionTiming.objects.create(
                decision=decision,
                claimed_at=claimed_at,
                seconds=max((created_at - claimed_at).total_seconds(), 0.0),
            )
        ReviewLock.objects.filter(message=message).delete()
        double_review_after_decision(decision=decision, message=message, from_status=from_status)
    return decision
