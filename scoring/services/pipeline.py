"""The scoring step: score a batch, store predictions and rule matches, route each message.

Exactly-once scoring rests on three guards rather than on the broker: a message is scored
only from `received`/`queued` (rows locked and re-read inside the writing transaction), a
Prediction is unique per (message, model version), and all writes of a batch happen in one
transaction. A task that is delivered twice (a killed worker, a sweeper re-enqueue) therefore
finds nothing left to do. How tasks are published: scoring.services.queueing."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from compliance_site.db import skip_locked
from scoring import routing
from scoring.constants import MessageStatus
from scoring.errors import DeviceFailed, DeviceOutOfMemory, ModelNotReady, ScoringInputError
from scoring.models import ClaimType, Message, ModelVersion, Prediction, RuleMatch
from scoring.segmentation import segments_json
from scoring.services.context import score_with_parts, scoring_plan
from scoring.services.queueing import messages_enqueue_explanation, messages_retry_scoring
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


def _default_scorer(version: ModelVersion):
    from scoring.classifier.loading import get_scorer

    return get_scorer(version)


def _score_isolating_failures(scorer, bodies: list[str], parts: list | None = None) -> list[object]:
    """Score the batch; if it fails as a whole, score one by one so that one bad message
    fails alone (its exception is returned in its place). A message that does not fit in the
    device's memory gets its DeviceOutOfMemory in its place: the caller defers it, never fails it.
    A batch under which the device itself failed (a CUDA error) raises DeviceFailed: no message
    is judged by a broken device."""
    from scoring.classifier.device_check import is_device_failure

    parts = parts if parts is not None else [None] * len(bodies)
    try:
        return list(score_with_parts(scorer, bodies, parts))
    except Exception as batch_exc:
        if is_device_failure(batch_exc):
            raise DeviceFailed(str(batch_exc)) from batch_exc
        logger.warning("batch scoring failed (%s); isolating messages", batch_exc)
    results: list[object] = []
    for body, part in zip(bodies, parts, strict=True):
        try:
            results.append(score_with_parts(scorer, [body], [part])[0])
        except Exception as exc:
            results.append(exc)
    return results


def _lock_scorable(ids: list[int]) -> list[Message]:
    return list(skip_locked(Message.objects.filter(id__in=ids, status__in=SCORABLE)))


def messages_score_batch(
    *, message_ids: Sequence[int], scorer_factory: ScorerFactory = _default_scorer
) -> BatchOutcome:
    """Score the given messages with the active model version, match rules, store one
    Prediction and the RuleMatches per message, and route each one (see scoring.routing).

    Idempotent: messages no longer in received/queued are skipped. A message the scorer
    refuses is marked failed with the reason without failing the others. Flagged and
    rule-hit messages are sent to the explanation queue after commit.

    What is not a message's fault charges no attempt (`_count_attempt`): the model (and its
    device) is loaded before any attempt is counted, so a worker that cannot load it raises
    without charging; a message that does not fit in the device's memory even alone is left
    queued, its attempt given back, and published again for another try (another worker, or
    this one with more memory free) after commit."""
    from scoring.routing import routing_rule_hits
    from scoring.selectors import active_compiled_rules

    version = active_model_version()
    if not Message.objects.filter(id__in=list(message_ids), status__in=SCORABLE).exists():
        return BatchOutcome(0, 0, len(message_ids), [])
    scorer = scorer_factory(version)
    poisoned = _count_attempt(message_ids)
    candidates = list(
        Message.objects.filter(id__in=list(message_ids), status__in=SCORABLE).only(
            "id", "body", "external_id"
        )
    )
    if not candidates:
        return BatchOutcome(0, poisoned, len(message_ids) - poisoned, [])

    # What the message's source adds (scoring.services.context): attachments and quoted history
    # already seen in its thread as parts of their own, a chat line's earlier lines.
    plan = scoring_plan(message_ids=[m.pk for m in candidates], bodies=[m.body for m in candidates])
    started = time.perf_counter()
    try:
        results = _score_isolating_failures(scorer, [m.body for m in candidates], plan.parts)
        results = plan.with_context(scorer, results, threshold=version.threshold)
    except DeviceFailed:
        _give_back_attempt([m.pk for m in candidates])
        raise
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
        deferred = [m.pk for m in mine if isinstance(by_id[m.pk][1], DeviceOutOfMemory)]
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
            if isinstance(result, DeviceOutOfMemory):
                continue  # stays queued (below)
            if isinstance(result, Exception):
                reason = (
                    str(result) if isinstance(result, ScoringInputError) else f"scoring error: {result!r}"
                )
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
                    message.external_id, rate=settings.QA_SAMPLE_RATE, salt=settings.SECRET_KEY
                ),
            )
            message.routing_prediction = prediction
            message.queue_score = prediction.score
            message.has_rule_hit = bool(hits[message.pk])
            message.route_reason = decided.reason
            message.is_qa_sample = decided.is_qa_sample
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
        if to_explain:
            ids = list(to_explain)
            transaction.on_commit(lambda: messages_enqueue_explanation(message_ids=ids))
        if deferred:
            _give_back_attempt(deferred)
            logger.warning("%d messages did not fit in device memory; published again", len(deferred))
            transaction.on_commit(lambda: messages_retry_scoring(message_ids=deferred))
        scored_ids = [m.pk for m in updates if m.status != MessageStatus.FAILED]
        if scored_ids and ModelVersion.objects.filter(is_shadow=True).exists():
            from scoring.services.shadow import messages_enqueue_shadow

            # After routing has committed: a challenger never delays the active model's work.
            transaction.on_commit(lambda: messages_enqueue_shadow(message_ids=scored_ids))
    skipped = len(message_ids) - scored - failed - poisoned - len(deferred)
    return BatchOutcome(scored, failed + poisoned, skipped, to_explain, deferred=len(deferred))


def _move(message: Message, path: list[str], now) -> None:
    """Set the status and timestamps of moving a locked message along `path`, each step checked
    against the state machine (scoring.constants.TRANSITIONS). A message scored straight from
    `received` (a task published whose claim then failed to commit, or a task scored in process
    by simulate_traffic) passes through `queued`."""
    if message.status == MessageStatus.RECEIVED and path[0] != MessageStatus.FAILED:
        path = [MessageStatus.QUEUED, *path]
    for field, value in path_fields(from_status=message.status, path=path, now=now).items():
        setattr(message, field, value)


def _count_attempt(message_ids: Sequence[int]) -> int:
    """Record that a worker starts scoring these messages (committed at once, so it survives a
    crash). A message that was started MAX_ATTEMPTS times without ever being written is taking
    workers down with it: it is failed with that reason, and the rest of its batch goes on."""
    from django.db.models import F

    ids = list(message_ids)
    with transaction.atomic():
        poisoned = Message.objects.filter(
            id__in=ids, status__in=SCORABLE, attempts__gte=settings.MAX_ATTEMPTS
        ).update(
            status=MessageStatus.FAILED,
            failed_at=timezone.now(),
            updated_at=timezone.now(),
            status_reason=f"scoring started {settings.MAX_ATTEMPTS} times and never completed "
            "(the worker died each time)",
        )
        Message.objects.filter(id__in=ids, status__in=SCORABLE).update(attempts=F("attempts") + 1)
    return poisoned


def _give_back_attempt(message_ids: Sequence[int]) -> None:
    """Undo `_count_attempt` for messages whose try ended without a crash or a verdict."""
    from django.db.models import F

    Message.objects.filter(id__in=list(message_ids), status__in=SCORABLE, attempts__gt=0).update(
        attempts=F("attempts") - 1
    )


def prediction_from_result(
    message: Message,
    version: ModelVersion,
    result,
    per_message_ms: float,
    claim_types,
    *,
    shadow: bool = False,
) -> Prediction:
    """An unsaved Prediction of `version` from a Scorer result, flagged at the version's threshold."""
    return Prediction(
        message=message,
        model_version=version,
        score=float(result.score),
        claim_type=claim_types.get(result.claim_type),
        probabilities={k: float(v) for k, v in result.probabilities.items()},
        window_scores=[
            {"start": w.start, "end": w.end, "score": float(w.score), "kind": w.kind, "routes": w.routes}
            for w in result.windows
        ],
        segments=segments_json(getattr(result, "segments", None) or []),
        context=dict(getattr(result, "context", None) or {}),
        threshold=version.threshold,
        flagged=float(result.score) >= version.threshold,
        is_shadow=shadow,
        latency_ms=per_message_ms,
    )


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
