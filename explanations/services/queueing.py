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
restarting their clock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from core.publish import publish
from scoring.constants import MessageStatus
from scoring.models import Message
from scoring.services.batches import chunks


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


def explanations_sweep(*, now=None, limit: int = 20_000) -> ExplanationSweepResult:
    """Publish explanation again for flagged messages still `scored` STUCK_AFTER_SECONDS after
    they were scored (or last published): their task may be lost. Their clock restarts, so one
    sweep publishes them once; a duplicate task is a cheap no-op."""
    now = now or timezone.now()
    stuck_before = now - timedelta(seconds=settings.STUCK_AFTER_SECONDS)
    waiting = list(
        Message.objects.filter(status=MessageStatus.SCORED, scored_at__lt=stuck_before)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    if not waiting:
        return ExplanationSweepResult(0)
    Message.objects.filter(id__in=waiting, status=MessageStatus.SCORED).update(scored_at=timezone.now())
    return ExplanationSweepResult(messages_enqueue_explanation(message_ids=waiting))
