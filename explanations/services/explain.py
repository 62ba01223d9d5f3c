"""Explaining scored messages in the pipeline (the offline judgements are in reports.py)."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch
from billiard.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from core.db import skip_locked
from explanations.attention_codec import encode_array
from explanations.engine import METHODS, MessageOutcome, MessageToExplain, MethodOutcome, explain_messages
from explanations.model_attention import AttentionMaps
from explanations.models import AttentionDiagnostic, Explanation, ExplanationStatus
from explanations.services.queueing import messages_enqueue_explanation
from scoring.classifier import scorer_for
from scoring.constants import MessageStatus
from scoring.errors import DeviceFailed, DeviceOutOfMemory
from scoring.models import Message, WorkStage
from scoring.segmentation import SEEN, Segment
from scoring.services.claims import (
    Claimant,
    work_claim_begin,
    work_claim_crashed,
    work_claim_end,
    work_claim_heartbeat,
    work_claim_release,
)
from scoring.services.transitions import messages_transition

logger = logging.getLogger(__name__)

# A message the device had no memory for is published for explanation again after this long.
RETRY_EXPLAIN_COUNTDOWN_S = 30


def _failed(reason: str) -> MessageOutcome:
    return MessageOutcome(span=None, methods={m: MethodOutcome(method=m, failure=reason) for m in METHODS})


def _out_of_memory(reason: str) -> MessageOutcome:
    return replace(_failed(reason), out_of_memory=True)


def _does_not_fit(outcome: MessageOutcome, *, tries: int) -> MessageOutcome:
    """The outcome of a message that ran out of device memory on its MAX_OOM_DEFERRALS-th try: no
    longer deferred, every method that did not finish gets a recorded failure that says so (a
    method that did finish, say occlusion beside an Integrated Gradients that did not fit, is kept)."""
    reason = f"does not fit in device memory on any worker that tried ({tries} tries)"
    methods = {
        name: result if result.ok else replace(result, failure=f"{reason}; last: {result.failure}"[:2000])
        for name, result in outcome.methods.items()
    }
    return replace(outcome, methods=methods, out_of_memory=False)


def _load_scorers(messages: Sequence[Message], scorer_factory) -> dict[int, object]:
    """The Scorer of each model version that routed these messages, loaded before the batch is
    claimed (a model that cannot be loaded is a recorded failure, not a crash); in its place the
    exception when it cannot be loaded. Database errors and device failures propagate."""
    scorers: dict[int, object] = {}
    for message in messages:
        version = message.routing_prediction.model_version
        if version.pk in scorers:
            continue
        try:
            scorers[version.pk] = scorer_factory(version)
        except (DatabaseError, DeviceFailed):
            raise
        except Exception as exc:  # no model, corrupt artifact, ...: recorded, nothing waits forever
            logger.exception("the model %s could not be loaded to explain", version.name)
            scorers[version.pk] = exc
    return scorers


def _explain_bisecting(scorer, items: list[MessageToExplain]) -> list[MessageOutcome]:
    """Explain the items together; a call that raises (or runs out of device memory) is split in
    two, and so on, until the message that makes it fail is alone: only that one gets the
    failure (a recorded failure, or out of memory: another try later)."""
    try:
        return explain_messages(scorer, items, **ig_options(), ig_budget=ig_budget())
    except (DatabaseError, DeviceFailed, SoftTimeLimitExceeded):
        raise
    except (DeviceOutOfMemory, torch.OutOfMemoryError) as exc:  # no verdict: another try later
        if len(items) == 1:
            logger.warning("explaining one message ran out of device memory: %s", exc)
            return [_out_of_memory(f"out of device memory: {exc}")]
    except Exception as exc:
        if len(items) == 1:
            logger.exception("explaining a message failed")
            return [_failed(f"the explanation could not be computed: {exc}")]
    middle = len(items) // 2
    return _explain_bisecting(scorer, items[:middle]) + _explain_bisecting(scorer, items[middle:])


def _compute(messages: Sequence[Message], scorers: dict[int, object]) -> dict[int, MessageOutcome]:
    """Explain the messages, grouped by the model version that routed them. Anything but a
    database error, a device failure or the soft time limit becomes a recorded failure of the
    message concerned alone."""
    groups: dict[int, list[Message]] = defaultdict(list)
    for message in messages:
        groups[message.routing_prediction.model_version_id].append(message)
    outcomes: dict[int, MessageOutcome] = {}
    for version_id, group in groups.items():
        scorer = scorers[version_id]
        if isinstance(scorer, Exception):
            results = [_failed(f"the explanation could not be computed: {scorer}")] * len(group)
        else:
            items = [
                MessageToExplain(
                    body=m.body,
                    threshold=m.routing_prediction.threshold,
                    window_scores=[
                        (w["start"], w["end"], w["score"]) for w in m.routing_prediction.window_scores
                    ],
                    rule_spans=[(r.start, r.end) for r in m.rule_matches.all()],
                    # The parts the prediction windowed: history already seen in the thread is
                    # kept for display and never windowed (scoring.services.context).
                    segments=[
                        Segment(p["kind"], p["start"], p["end"])
                        for p in m.routing_prediction.segments
                        if p["kind"] != SEEN
                    ]
                    or None,
                )
                for m in group
            ]
            results = _explain_bisecting(scorer, items)
        outcomes.update({m.pk: r for m, r in zip(group, results, strict=True)})
    return outcomes


def ig_options() -> dict[str, Any]:
    """IG's keyword arguments from the settings (n_steps, doublings, precision): the pipeline,
    the faithfulness report and the canary check explain alike."""
    return {
        "n_steps": settings.IG_N_STEPS,
        "doublings": settings.IG_REFINE_DOUBLINGS,
        "precision": settings.IG_PRECISION,
    }


def ig_budget() -> dict[str, int]:
    """How IG's work is batched (settings IG_TOKENS_PER_FORWARD, IG_TOKENS_PER_CALL): it changes
    the speed and the memory used, not the attributions, so it is not part of ig_options (whose
    values a stored faithfulness report must match)."""
    return {
        "tokens_per_forward": settings.IG_TOKENS_PER_FORWARD,
        "tokens_per_call": settings.IG_TOKENS_PER_CALL,
    }


def _explanation_row(message: Message, outcome: MessageOutcome, result: MethodOutcome) -> Explanation:
    prediction = message.routing_prediction
    row = Explanation(
        message=message,
        prediction=prediction,
        model_version_id=prediction.model_version_id,
        method=result.method,
        threshold=prediction.threshold,
        compute_ms=result.compute_ms,
        n_steps=result.n_steps,
        convergence_delta=result.convergence_delta,
        precision=result.precision or "",
    )
    if outcome.span is not None:
        row.window_start, row.window_end = outcome.span.start, outcome.span.end
    if not result.ok:
        row.status, row.failure_reason = ExplanationStatus.FAILED, result.failure
        return row
    check = result.check.as_dict()
    row.words = result.words
    row.top_words = result.top_words
    row.rule_agreement = result.rule_agreement
    for name in (
        "k",
        "score_full",
        "score_without_top",
        "score_top_only",
        "comprehensiveness",
        "sufficiency",
        "random_baseline",
        "aopc",
        "aopc_curve",
        "flipped",
        "passed",
        "pass_rule",
        "verdict_text",
    ):
        setattr(row, name, check[name])
    return row


def _attention_row(prediction_id: int, maps: AttentionMaps) -> AttentionDiagnostic:
    return AttentionDiagnostic(
        prediction_id=prediction_id,
        tokens=maps.tokens,
        layers=maps.weights.shape[0],
        heads=maps.weights.shape[1],
        weights=encode_array(maps.weights),
        rollout=encode_array(maps.rollout),
    )


def _lock_scored(ids: list[int]) -> list[int]:
    query = Message.objects.filter(id__in=ids, status=MessageStatus.SCORED)
    return list(skip_locked(query).values_list("id", flat=True))


def messages_explain_batch(
    *, message_ids: Sequence[int], scorer_factory=scorer_for, claimant: Claimant | None = None
) -> dict[str, int]:
    """Explain scored messages and move them to review.

    Promises: only messages still `scored` are touched (a second delivery, or a message another
    live worker process has claimed, is skipped); per message, each method of engine.METHODS
    (Integrated Gradients, occlusion) is stored once per prediction with every number of its
    faithfulness check, its rule agreement, n_steps, convergence delta and compute time, plus
    the attention diagnostic of the driving window; the work is batched across the messages. A
    message whose explanation could not be computed gets Explanation rows with status=failed
    and the reason, and still reaches in_review (directly from scored, with "explanation failed:
    <reason>" in status_reason): nothing waits forever. A message with at least one computed
    explanation goes scored -> explained -> in_review.

    The batch is claimed (scoring.services.claims) once the models are loaded: a batch that
    crashes the worker or runs past the soft time limit is split in two until the message that
    does it is alone; that message is charged (explain_attempts), and at MAX_ATTEMPTS it gets a
    recorded explanation failure and goes to review, so it never blocks the gpu queue. Database
    errors propagate uncharged, so that the task retries; so does DeviceFailed (a CUDA error:
    the task goes back to the queue and the worker stops taking model work). A message the
    device had no memory for, even alone, is no failure: nothing is written for it, it stays
    `scored` and is published again RETRY_EXPLAIN_COUNTDOWN_S later, for any worker (the sweeper
    too republishes it); each such try is counted (explain_deferrals), and the
    MAX_OOM_DEFERRALS-th gets a recorded failure ("does not fit in device memory on any worker
    that tried") for the methods that did not finish and goes to review: it never loops."""
    ids = sorted({int(i) for i in message_ids})
    messages = list(
        Message.objects.filter(id__in=ids, status=MessageStatus.SCORED)
        .select_related("routing_prediction__model_version")
        .prefetch_related("rule_matches")
    )
    # Taken: a message left `scored` after this is one a worker had, not one still waiting on the
    # broker (the sweeper counts only the former: explanations_sweep).
    Message.objects.filter(id__in=[m.pk for m in messages]).update(taken_at=timezone.now())
    exhausted = [m for m in messages if m.explain_attempts >= settings.MAX_ATTEMPTS]
    failed = _record_exhausted(exhausted) if exhausted else 0
    messages = [m for m in messages if m.explain_attempts < settings.MAX_ATTEMPTS]
    if not messages:
        return {"explained": 0, "failed": failed, "deferred": 0, "skipped": len(ids) - failed}
    scorers = _load_scorers([m for m in messages if m.routing_prediction is not None], scorer_factory)
    claimant = claimant or Claimant.here()
    start = work_claim_begin(stage=WorkStage.EXPLAIN, message_ids=[m.pk for m in messages], claimant=claimant)
    mine = set(start.work)
    messages = [m for m in messages if m.pk in mine]
    if not messages:
        return {"explained": 0, "failed": failed, "deferred": 0, "skipped": len(ids) - failed}
    try:
        with work_claim_heartbeat(claim=start.claim, enabled=claimant.heartbeat):
            counts = _explain_claimed(messages, scorers, claim=start.claim)
    except SoftTimeLimitExceeded:
        limit = settings.EXPLAIN_SOFT_TIME_LIMIT_SECONDS
        work_claim_crashed(claim=start.claim, reason=f"explaining ran past the soft time limit ({limit} s)")
        return {"explained": 0, "failed": failed, "deferred": 0, "skipped": len(ids) - failed}
    except (OperationalError, InterfaceError, DeviceFailed):  # transient: no crash, nothing charged
        work_claim_release(claim=start.claim)
        raise
    except Exception as exc:
        logger.exception("an explanation batch of %d messages raised", len(messages))
        work_claim_crashed(claim=start.claim, reason=f"explaining raised {exc!r}"[:500])
        raise
    counts["failed"] += failed
    counts["skipped"] = len(ids) - counts["explained"] - counts["failed"] - counts["deferred"]
    return counts


def _record_exhausted(messages: Sequence[Message]) -> int:
    """Messages that crashed or timed out their explanation batch alone MAX_ATTEMPTS times: a
    recorded failure of every method, and on to review without a highlight."""
    return messages_explanation_fail(
        failures=[
            (
                message,
                f"explaining crashed or timed out its worker {message.explain_attempts} times with "
                f"this message alone; last: {message.status_reason or 'no reason recorded'}",
            )
            for message in messages
        ]
    )


def messages_explanation_fail(*, failures: Sequence[tuple[Message, str]]) -> int:
    """Give up explaining messages whose explanation will not come (crashed alone MAX_ATTEMPTS
    times; published again by the sweeper MAX_SWEEP_REQUEUES times): each method not stored yet
    for the routing prediction gets a recorded failure with the reason, and the message moves
    scored -> in_review with "explanation failed: <reason>", so it is reviewed without a
    highlight. A message no longer `scored` is left alone. Returns how many moved."""
    moved = 0
    with transaction.atomic():
        for message, reason in failures:
            if not messages_transition(
                message_ids=[message.pk],
                from_statuses=[MessageStatus.SCORED],
                to_status=MessageStatus.IN_REVIEW,
                reason=f"explanation failed: {reason}"[:2000],
            ):
                continue  # explained or failed meanwhile: nothing to record
            moved += 1
            if message.routing_prediction is not None:
                outcome = _failed(reason)
                existing = set(
                    Explanation.objects.filter(prediction=message.routing_prediction).values_list(
                        "method", flat=True
                    )
                )
                Explanation.objects.bulk_create(
                    _explanation_row(message, outcome, result)
                    for result in outcome.methods.values()
                    if result.method not in existing
                )
    return moved


def _explain_claimed(messages: list[Message], scorers: dict[int, object], *, claim) -> dict[str, int]:
    """Compute and store the claimed messages' explanations; the claim ends in the writing
    transaction."""
    unpredicted = [m.pk for m in messages if m.routing_prediction is None]
    messages = [m for m in messages if m.routing_prediction is not None]
    outcomes = _compute(messages, scorers) if messages else {}

    explained = failed = 0
    with transaction.atomic():
        mine = set(_lock_scored([m.pk for m in messages] + unpredicted))
        existing = set(Explanation.objects.filter(message_id__in=mine).values_list("prediction_id", "method"))
        has_attention = set(
            AttentionDiagnostic.objects.filter(prediction__message_id__in=mine).values_list(
                "prediction_id", flat=True
            )
        )
        rows, attention_rows, ok_ids, failed_ids = [], [], [], {}
        out_of_memory = [m for m in messages if m.pk in mine and outcomes[m.pk].out_of_memory]
        deferred = [m.pk for m in out_of_memory if m.explain_deferrals + 1 < settings.MAX_OOM_DEFERRALS]
        for message in out_of_memory:
            if message.pk not in deferred:  # its last try: a recorded failure, on to review
                outcomes[message.pk] = _does_not_fit(
                    outcomes[message.pk], tries=message.explain_deferrals + 1
                )
        if out_of_memory:
            Message.objects.filter(id__in=[m.pk for m in out_of_memory]).update(
                explain_deferrals=F("explain_deferrals") + 1
            )
        for message in messages:
            if message.pk not in mine or message.pk in deferred:
                continue
            outcome = outcomes[message.pk]
            prediction_id = message.routing_prediction_id
            for result in outcome.methods.values():
                if (prediction_id, result.method) not in existing:
                    rows.append(_explanation_row(message, outcome, result))
            if outcome.attention is not None and prediction_id not in has_attention:
                attention_rows.append(_attention_row(prediction_id, outcome.attention))
            if any(r.ok for r in outcome.methods.values()):
                ok_ids.append(message.pk)
            else:
                failed_ids[message.pk] = next(iter(outcome.methods.values())).failure
        Explanation.objects.bulk_create(rows)
        AttentionDiagnostic.objects.bulk_create(attention_rows)
        if ok_ids:
            messages_transition(
                message_ids=ok_ids,
                from_statuses=[MessageStatus.SCORED],
                to_status=MessageStatus.EXPLAINED,
                status_reason="",  # a crash noted while it waited is history now
            )
            explained = messages_transition(
                message_ids=ok_ids, from_statuses=[MessageStatus.EXPLAINED], to_status=MessageStatus.IN_REVIEW
            )
        for message_id, reason in failed_ids.items():
            failed += messages_transition(
                message_ids=[message_id],
                from_statuses=[MessageStatus.SCORED],
                to_status=MessageStatus.IN_REVIEW,
                reason=f"explanation failed: {reason}"[:2000],
            )
        no_prediction = [i for i in unpredicted if i in mine]
        if no_prediction:
            failed += messages_transition(
                message_ids=no_prediction,
                from_statuses=[MessageStatus.SCORED],
                to_status=MessageStatus.IN_REVIEW,
                reason="explanation failed: the message has no routing prediction to explain",
            )
        work_claim_end(claim=claim)
        if deferred:
            logger.warning("%d messages did not fit in device memory; explained later", len(deferred))
            # the sweeper's clock restarts, so that one retry is in flight per message
            Message.objects.filter(id__in=deferred, status=MessageStatus.SCORED).update(
                scored_at=timezone.now()
            )
            transaction.on_commit(
                lambda: messages_enqueue_explanation(
                    message_ids=deferred, countdown=RETRY_EXPLAIN_COUNTDOWN_S
                )
            )
    return {"explained": explained, "failed": failed, "deferred": len(deferred), "skipped": 0}
