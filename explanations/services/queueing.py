"""The explanation stage's queue: its batches, its publishing and its sweeper.

Flagged and rule-hit messages stay `scored` until explained. They reach this queue by one
named hand-off, `messages_enqueue_explanation`: the scoring task (scoring.tasks.score_batch)
calls it once its batch has committed, with the ids the scoring step routed to explanation
(BatchOutcome.to_explain); scoring's claim recovery calls it for the parts of a crashed
explanation batch, and the explanation step itself for the messages its device had no memory
for. Scoring imports this module only inside those functions (scoring may import explanations,
never the floors above: tests/site/test_layering.py).

Batches are EXPLAIN_BATCH_SIZE messages on EXPLAIN_QUEUE. A publish the broker refuses is left
to the sweeper: `explanations_sweep` (explanations.tasks.sweep, celery beat every
SWEEP_INTERVAL_SECONDS) republishes flagged `scored` messages older than STUCK_AFTER_SECONDS,
restarting their clock; one a worker had taken since its last publish is counted
(explain_requeues), and at MAX_SWEEP_REQUEUES it goes to review with a recorded explanation
failure instead, so it never loops (one waiting on the broker behind a backlog is never counted)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from core.publish import publish
from scoring.constants import MessageStatus
from scoring.models import Message
from scoring.services.batches import chunks

logger = logging.getLogger(__name__)


def messages_enqueue_explanation(*, message_ids: Sequence[int], countdown: float | None = None) -> int:
    """Publish explanation tasks in batches of EXPLAIN_BATCH_SIZE (`countdown` seconds from now:
    another try of messages the device had no memory for); a failed publish is left to the
    sweeper (the messages stay `scored`). Returns the number of messages published."""
    from explanations.tasks import explain_batch

    published = 0
    for chunk in chunks(list(message_ids), settings.EXPLAIN_BATCH_SIZE):
        if not publish(
            explain_batch,
            args=[chunk],
            queue=settings.EXPLAIN_QUEUE,
            countdown=countdown,
            what=f"{len(chunk)} explanations wait for the sweeper",
        ):
            break
        published += len(chunk)
    return published


@dataclass(frozen=True)
class ExplanationSweepResult:
    explanations_requeued: int
    explanations_given_up: int = 0  # sent to review unexplained (MAX_SWEEP_REQUEUES)


def explanations_sweep(*, now=None, limit: int = 20_000) -> ExplanationSweepResult:
    """Publish explanation again for flagged messages still `scored` STUCK_AFTER_SECONDS after
    they were scored (or last published): their task may be lost. Their clock restarts, so one
    sweep publishes them once; a duplicate task is a cheap no-op. A publish is counted
    (explain_requeues) when a worker took the message since its last one (taken_at after
    scored_at); a message found stuck with MAX_SWEEP_REQUEUES of them is not published again: it
    goes to review with a recorded explanation failure (messages_explanation_fail)."""
    now = now or timezone.now()
    stuck_before = now - timedelta(seconds=settings.STUCK_AFTER_SECONDS)
    waiting = list(
        Message.objects.filter(status=MessageStatus.SCORED, scored_at__lt=stuck_before)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    if not waiting:
        return ExplanationSweepResult(0)
    given_up = _give_up(waiting)
    waiting = [i for i in waiting if i not in given_up]
    # Taken by a worker since it was scored or last published, and still `scored`: counted once
    # published again. One still waiting on the broker (a backlog, no worker) is not counted.
    taken = set(
        Message.objects.filter(
            id__in=waiting, taken_at__isnull=False, taken_at__gt=F("scored_at")
        ).values_list("id", flat=True)
    )
    Message.objects.filter(id__in=waiting, status=MessageStatus.SCORED).update(scored_at=timezone.now())
    published = messages_enqueue_explanation(message_ids=waiting)
    # only what reached the broker counts (batches go in order): an outage delays, it does not fail
    counted = [i for i in waiting[:published] if i in taken]
    Message.objects.filter(id__in=counted).update(explain_requeues=F("explain_requeues") + 1)
    return ExplanationSweepResult(published, len(given_up))


def _give_up(ids: list[int]) -> set[int]:
    """Of these stuck messages, those a worker took and left unexplained MAX_SWEEP_REQUEUES times,
    each time published again by the sweeper (0: no limit), get a recorded explanation failure
    and go to review; returns their ids."""
    from explanations.services.explain import messages_explanation_fail

    limit = settings.MAX_SWEEP_REQUEUES
    if not limit:
        return set()
    exhausted = list(
        Message.objects.filter(id__in=ids, status=MessageStatus.SCORED, explain_requeues__gte=limit)
        .select_related("routing_prediction")
        .order_by("id")
    )
    if not exhausted:
        return set()
    reason = (
        f"a worker took its explanation task and left it unexplained {limit} times, each time "
        "published again by the sweeper (see the gpu workers' log)"
    )
    logger.warning("%d flagged messages go to review unexplained: %s", len(exhausted), reason)
    messages_explanation_fail(failures=[(m, reason) for m in exhausted])
    return {m.pk for m in exhausted}
