"""The scoring step: score a batch, store predictions and rule matches, route each message.

Exactly-once scoring rests on three guards rather than on the broker: a message is scored
only from `received`/`queued` (rows locked and re-read inside the writing transaction), a
Prediction is unique per (message, model version), and all writes of a batch happen in one
transaction. A task that is delivered twice (a killed worker, a sweeper re-enqueue) therefore
finds nothing left to do. A batch that crashes its worker is split until the message that does
it is alone (scoring.services.claims). How tasks are published: scoring.services.queueing;
what it routes to explanation it returns (BatchOutcome.to_explain) and the task hands over."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from billiard.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from core.db import skip_locked
from scoring import routing
from scoring.classifier import scorer_for
from scoring.constants import MessageStatus
from scoring.errors import DeviceFailed, DeviceOutOfMemory, ModelNotReady, ScoringInputError
from scoring.models import ClaimType, Message, ModelVersion, Prediction, RuleMatch, WorkStage
from scoring.services.batches import prediction_from_result
from scoring.services.claims import (
    Claimant,
    work_claim_begin,
    work_claim_crashed,
    work_claim_end,
    work_claim_heartbeat,
    work_claim_release,
)
from scoring.services.context import score_with_parts, scoring_plan
from scoring.services.queueing import messages_retry_scoring
from scoring.services.transitions import path_fields

logger = logging.getLogger(__name__)

SCORABLE = (MessageStatus.RECEIVED, MessageStatus.QUEUED)


def active_model_version() -> ModelVersion:
    version = ModelVersion.objects.filter(is_active=True).first()
    if version is None:
        raise ModelNotReady("No model version is active: run `python manage.py activate_model <version>`.")
    return version


@dataclass(frozen=True)
class BatchOutcome:
    scored: int
    failed: int
    skipped: int
    to_explain: list[int]
    deferred: int = 0  # left queued for another try (out of device memory), uncharged


ScorerFactory = Callable[[ModelVersion], object]


def _score_bisecting(scorer, bodies: list[str], parts: list | None = None) -> list[object]:
    """Score the texts (with what each message's source adds, `parts`: scoring.services.context);
    a call that raises is split in two, and so on, until the text that makes it raise is alone
    and gets its exception in its place (one bad text among 256 costs about 16 calls, not 256). A
    message that does not fit in the device's memory gets its DeviceOutOfMemory in its place: the
    caller defers it (and fails it only on its MAX_OOM_DEFERRALS-th such try). A call under which
    the device itself failed (a CUDA error) raises DeviceFailed: no message is judged by a broken
    device."""
    from scoring.classifier.device_check import is_device_failure

    parts = parts if parts is not None else [None] * len(bodies)
    try:
        return list(score_with_parts(scorer, bodies, parts))
    except SoftTimeLimitExceeded:  # the task's time is up: no text's fault
        raise
    except Exception as exc:
        if is_device_failure(exc):
            raise DeviceFailed(str(exc)) from exc
        if len(bodies) == 1:
            return [exc]
        logger.warning("scoring %d texts failed (%s); splitting them", len(bodies), exc)
    middle = len(bodies) // 2
    return _score_bisecting(scorer, bodies[:middle], parts[:middle]) + _score_bisecting(
        scorer, bodies[middle:], parts[middle:]
    )


def _lock_scorable(ids: list[int]) -> list[Message]:
    return list(skip_locked(Message.objects.filter(id__in=ids, status__in=SCORABLE)))


def messages_score_batch(
    *,
    message_ids: Sequence[int],
    scorer_factory: ScorerFactory = scorer_for,
    claimant: Claimant | None = None,
) -> BatchOutcome:
    """Score the given messages with the active model version, match rules, store one
    Prediction and the RuleMatches per message, and route each one (see scoring.routing).

    Idempotent: messages no longer in received/queued are skipped, and so are messages another
    live worker process has claimed. A message the scorer refuses is marked failed with the
    reason without failing the others (a call that raises is bisected down to that message).
    Flagged and rule-hit messages stay `scored` and are returned in `to_explain`: publishing
    them is the explanation stage's (the task hands them over, scoring.tasks.score_batch).

    The batch is claimed (scoring.services.claims) after the model is loaded and before any
    work: a batch that crashes the worker, or runs past the soft time limit, is split in two
    until the message that does it is alone, and only that message is charged (failed at
    MAX_ATTEMPTS). Nothing else charges an attempt: a model (or device) that cannot be loaded
    (the reason is noted in status_reason; the sweeper fails a message taken and left queued
    MAX_SWEEP_REQUEUES times),
    a transient database error (the claim is released and the task retries), a device that
    fails (DeviceFailed: the task goes back to the queue), a message that does not fit in the
    device's memory even alone (left queued and published again after commit; such tries are
    counted in `deferrals`, and the MAX_OOM_DEFERRALS-th marks it failed: "does not fit in device
    memory on any worker that tried")."""
    scorable = list(
        Message.objects.filter(id__in=list(message_ids), status__in=SCORABLE).values_list("id", flat=True)
    )
    if not scorable:
        return BatchOutcome(0, 0, len(message_ids), [])
    # Taken: a message left queued after this is one a worker had, not one still waiting on the
    # broker behind a backlog (the sweeper counts only the former: messages_sweep).
    Message.objects.filter(id__in=scorable).update(taken_at=timezone.now())
    try:
        version = active_model_version()
        scorer = scorer_factory(version)
    except (OperationalError, InterfaceError, DeviceFailed):
        raise
    except Exception as exc:  # no model, or it cannot be loaded: said where the failed page shows it
        Message.objects.filter(id__in=scorable, status__in=SCORABLE).update(
            status_reason=f"not scored: {exc}"[:2000]
        )
        raise
    claimant = claimant or Claimant.here()
    start = work_claim_begin(stage=WorkStage.SCORE, message_ids=scorable, claimant=claimant)
    if not start.work:
        return BatchOutcome(0, 0, len(message_ids), [])
    try:
        with work_claim_heartbeat(claim=start.claim, enabled=claimant.heartbeat):
            outcome = _score_claimed(start.work, version=version, scorer=scorer, claim=start.claim)
    except SoftTimeLimitExceeded:
        limit = settings.SCORING_SOFT_TIME_LIMIT_SECONDS
        work_claim_crashed(claim=start.claim, reason=f"scoring ran past the soft time limit ({limit} s)")
        return BatchOutcome(0, 0, len(message_ids), [])
    except (OperationalError, InterfaceError, DeviceFailed):  # transient: no crash, nothing charged
        work_claim_release(claim=start.claim)
        raise
    except Exception as exc:
        logger.exception("a scoring batch of %d messages raised", len(start.work))
        work_claim_crashed(claim=start.claim, reason=f"scoring raised {exc!r}"[:500])
        raise
    skipped = len(message_ids) - outcome.scored - outcome.failed - outcome.deferred
    return replace(outcome, skipped=skipped)


def _score_claimed(ids: list[int], *, version: ModelVersion, scorer, claim) -> BatchOutcome:
    """Score, store and route the claimed messages; the claim ends in the writing transaction."""
    from scoring.routing import routing_rule_hits
    from scoring.selectors import active_compiled_rules

    candidates = list(
        Message.objects.filter(id__in=ids, status__in=SCORABLE).only("id", "body", "external_id")
    )
    if not candidates:
        work_claim_end(claim=claim)
        return BatchOutcome(0, 0, 0, [])

    # What the message's source adds (scoring.services.context): attachments and quoted history
    # already seen in its thread as parts of their own, a chat line's earlier lines.
    plan = scoring_plan(message_ids=[m.pk for m in candidates], bodies=[m.body for m in candidates])
    started = time.perf_counter()
    results = _score_bisecting(scorer, [m.body for m in candidates], plan.parts)
    results = plan.with_context(scorer, results, threshold=version.threshold)
    per_message_ms = (time.perf_counter() - started) * 1000.0 / len(candidates)
    compiled_rules = active_compiled_rules()
    hits = {
        m.pk: routing_rule_hits(
            m.body,
            compiled_rules,
            segmented=bool(getattr(scorer, "segmented", False)),
            segments=getattr(r, "segments", None),
        )
        for m, r in zip(candidates, results, strict=True)
    }
    by_id = {m.pk: (m, r) for m, r in zip(candidates, results, strict=True)}
    claim_types = {ct.code: ct for ct in ClaimType.objects.all()}

    scored = failed = 0
    to_explain: list[int] = []
    deferred: list[int] = []
    now = timezone.now()
    with transaction.atomic():
        mine = _lock_scorable(list(by_id))
        out_of_memory = [m for m in mine if isinstance(by_id[m.pk][1], DeviceOutOfMemory)]
        deferred = [m.pk for m in out_of_memory if m.deferrals + 1 < settings.MAX_OOM_DEFERRALS]
        for message in out_of_memory:
            message.deferrals += 1  # written below: bulk_update for the last try, update for the others
        already = set(
            Prediction.objects.filter(message_id__in=[m.pk for m in mine], model_version=version).values_list(
                "message_id", flat=True
            )
        )
        predictions: list[Prediction] = []
        matches: list[RuleMatch] = []
        updates: list[Message] = []
        for message in mine:
            _, result = by_id[message.pk]
            if isinstance(result, Exception) or message.pk in already:
                continue
            predictions.append(prediction_from_result(message, version, result, per_message_ms, claim_types))
            matches.extend(_rule_matches(message, hits[message.pk], claim_types))
        Prediction.objects.bulk_create(predictions)
        RuleMatch.objects.bulk_create(matches)
        prediction_of = {p.message_id: p for p in predictions}

        for message in mine:
            _, result = by_id[message.pk]
            if message.pk in deferred:
                continue  # stays queued (below)
            if isinstance(result, Exception):
                if isinstance(result, DeviceOutOfMemory):  # its MAX_OOM_DEFERRALS-th try
                    reason = (
                        "does not fit in device memory on any worker that tried "
                        f"({message.deferrals} tries); last: {result}"
                    )
                elif isinstance(result, ScoringInputError):
                    reason = str(result)
                else:
                    reason = f"scoring error: {result!r}"
                _move(message, [MessageStatus.FAILED], now)
                message.status_reason = reason
                updates.append(message)
                failed += 1
                continue
            prediction = prediction_of.get(message.pk)
            if prediction is None:  # scored by an earlier delivery that crashed before routing
                prediction = Prediction.objects.get(message=message, model_version=version)
            decided = routing.route(
                score=prediction.score,
                threshold=prediction.threshold,
                rule_hit=bool(hits[message.pk]),
                qa_sample=routing.is_qa_sample(
                    message.external_id, rate=settings.QA_SAMPLE_RATE, salt=settings.QA_SAMPLE_SALT
                ),
                unread_part=message.has_unread_part,
            )
            message.routing_prediction = prediction
            message.queue_score = prediction.score
            message.has_rule_hit = bool(hits[message.pk])
            message.route_reason = decided.reason
            message.is_qa_sample = decided.is_qa_sample
            message.status_reason = ""  # a crash noted while it waited is history now
            if decided.needs_explanation:
                _move(message, [MessageStatus.SCORED], now)
                to_explain.append(message.pk)
            elif decided.to_review:
                _move(message, [MessageStatus.SCORED, MessageStatus.IN_REVIEW], now)
            else:
                _move(message, [MessageStatus.SCORED, MessageStatus.CLEARED], now)
            updates.append(message)
            scored += 1
        for message in updates:
            message.updated_at = now
        Message.objects.bulk_update(
            updates,
            [
                "status",
                "status_reason",
                "deferrals",
                "queued_at",
                "failed_at",
                "routing_prediction",
                "queue_score",
                "has_rule_hit",
                "route_reason",
                "is_qa_sample",
                "scored_at",
                "in_review_at",
                "cleared_at",
                "updated_at",
            ],
        )
        work_claim_end(claim=claim)
        if deferred:
            logger.warning("%d messages did not fit in device memory; published again", len(deferred))
            Message.objects.filter(id__in=deferred).update(deferrals=F("deferrals") + 1)
            transaction.on_commit(lambda: messages_retry_scoring(message_ids=deferred))
        scored_ids = [m.pk for m in updates if m.status != MessageStatus.FAILED]
        if scored_ids and ModelVersion.objects.filter(is_shadow=True).exists():
            from scoring.services.shadow import messages_enqueue_shadow

            # After routing has committed: a challenger never delays the active model's work.
            transaction.on_commit(lambda: messages_enqueue_shadow(message_ids=scored_ids))
    return BatchOutcome(scored, failed, 0, to_explain, deferred=len(deferred))


def _move(message: Message, path: list[str], now) -> None:
    """Set the status and timestamps of moving a locked message along `path`, each step checked
    against the state machine (scoring.constants.TRANSITIONS). A message scored straight from
    `received` (a task published whose claim then failed to commit, or a task scored in process
    by simulate_traffic) passes through `queued`."""
    if message.status == MessageStatus.RECEIVED and path[0] != MessageStatus.FAILED:
        path = [MessageStatus.QUEUED, *path]
    for field, value in path_fields(from_status=message.status, path=path, now=now).items():
        setattr(message, field, value)


def _rule_matches(message: Message, hits, claim_types) -> list[RuleMatch]:
    return [
        RuleMatch(
            message=message,
            rule_id=hit.rule_id,
            rule_code=hit.code,
            rule_set_version=hit.rule_set_version,
            claim_type=claim_types[hit.claim_type],
            start=hit.start,
            end=hit.end,
            text=hit.text,
        )
        for hit in hits
    ]
