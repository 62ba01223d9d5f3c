"""Getting messages onto the broker: batches, the requested gathers, and the sweeper.

Where scoring tasks come from:
- a bulk request publishes its new messages in batches of up to SCORING_BATCH_SIZE as soon as
  its transaction commits;
- a single message is stored `received` and asks for a gather GATHER_DELAY_SECONDS later,
  unless this process already has one pending; the gather collects every message waiting in
  `received` into batches, so a stream of single POSTs becomes a few batched tasks instead of
  one task per message (messages_request_gather);
- the sweeper (celery beat, every SWEEP_INTERVAL_SECONDS) gathers whatever still waits (a
  gather request lost to a broker outage), recovers the batches of worker processes that died
  (their work claims: scoring.services.claims, split and published again within a sweep on this
  host, WORK_CLAIM_STALE_SECONDS elsewhere) and republishes work whose task may be lost without
  a claim: `queued` messages older than STUCK_AFTER_SECONDS.

Explanation is the next stage's queue, not this module's: the scoring task hands the messages it
routed to explanation to explanations.services.queueing.messages_enqueue_explanation after its
commit, and the explanations sweeper (explanations.tasks.sweep) republishes flagged `scored`
messages whose explanation never came.

Why a requested gather and not a beat tick: a gather every 0.5 s from beat wakes beat, a
worker and the database twice a second whether or not anything waits, and measured on a 2-core
CPU it cost 18 % of scoring throughput (bench_pipeline ratio 0.63 vs 0.77). A requested gather
costs nothing when nothing arrives.

A message leaves `received` only once its task is published, in the same transaction that
claimed it, so a broker outage leaves it `received` for the next gather: delayed, never lost.
Two publishers (a bulk request and a gather) cannot claim the same message: on PostgreSQL
the claim locks the rows (SKIP LOCKED, so a publisher never waits for another); SQLite has no
row locks, but its transactions start IMMEDIATE here (settings), so publishers take turns on the
whole database, each holding it for one publish (at most CELERY_BROKER_CONNECTION_TIMEOUT when
the broker is down): the embedded default trades that for needing no server. A worker that
receives a task before its publisher has committed waits on those locks, then finds the
messages `queued`. A worker on the `default` queue runs the gathers and beat runs the sweeper;
/healthz reports a message that waits too long in `received`."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Case, F, PositiveSmallIntegerField, Q, When
from django.utils import timezone

from core.db import skip_locked
from core.publish import publish
from scoring.constants import MessageStatus
from scoring.models import Message
from scoring.services.batches import chunks
from scoring.services.transitions import messages_transition

logger = logging.getLogger(__name__)


def _claim_received(ids: list[int]) -> list[int]:
    """Lock the messages of `ids` that are still `received` (skipping rows another publisher
    holds) for the rest of the caller's transaction."""
    query = Message.objects.filter(id__in=ids, status=MessageStatus.RECEIVED).order_by("id")
    return list(skip_locked(query).values_list("id", flat=True))


def messages_enqueue_scoring(*, message_ids: Sequence[int]) -> int:
    """Publish scoring tasks of up to SCORING_BATCH_SIZE of these messages and move them
    received -> queued; messages no longer `received` are left alone.

    Each batch is claimed, published and marked queued in one transaction: when the broker is
    down the publish fails, nothing is written, and the messages stay `received` for the next
    gather. Returns the number of messages published."""
    from scoring.tasks import score_batch

    published = 0
    for chunk in chunks(list(message_ids), settings.SCORING_BATCH_SIZE):
        with transaction.atomic():
            claimed = _claim_received(chunk)
            if not claimed:
                continue
            # Nothing is written before the publish, so a refused one needs no rollback: returning
            # leaves the messages `received` for the next gather.
            if not publish(
                score_batch,
                args=[claimed],
                queue=settings.SCORING_QUEUE,
                what=f"{len(claimed)} messages stay received",
            ):
                return published
            messages_transition(
                message_ids=claimed, from_statuses=[MessageStatus.RECEIVED], to_status=MessageStatus.QUEUED
            )
        published += len(claimed)
    return published


# A message that did not fit in a worker's device memory is published again after this long.
RETRY_SCORING_COUNTDOWN_S = 30


def messages_retry_scoring(*, message_ids: Sequence[int]) -> int:
    """Publish scoring again for `queued` messages whose try ended without a verdict (out of
    device memory), RETRY_SCORING_COUNTDOWN_S from now, so that any worker may take them, and
    restart their clock as the sweeper does (so the sweeper does not publish them too: one retry
    in flight per message). When the broker is down nothing is published: the sweeper re-enqueues
    them later. Returns how many were published."""
    waiting = Message.objects.filter(id__in=list(message_ids), status=MessageStatus.QUEUED)
    ids = list(waiting.values_list("id", flat=True))
    return _republish(ids, now=timezone.now(), countdown=RETRY_SCORING_COUNTDOWN_S)


def messages_gather(*, limit: int = 20_000) -> int:
    """Queue every message waiting in `received` (single POSTs, and anything whose publish
    failed), oldest first, in batches of up to SCORING_BATCH_SIZE. Returns how many were
    published; 0 when the broker is still down (they wait for the next gather)."""
    waiting = list(
        Message.objects.filter(status=MessageStatus.RECEIVED)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    return messages_enqueue_scoring(message_ids=waiting) if waiting else 0


GATHER_PENDING_KEY = "scoring:gather-pending"


def messages_request_gather() -> bool:
    """Publish a gather GATHER_DELAY_SECONDS from now unless one is already pending (the cache
    key lives a little less than the delay, so a message that finds it set was committed before
    that gather runs). Returns whether a gather was published; when the broker is down nothing
    is, and the sweeper gathers the message later."""
    from scoring.tasks import gather

    delay = settings.GATHER_DELAY_SECONDS
    # The deadline is kept in the value: not every cache backend honours sub-second timeouts
    # (Django's Redis cache rounds them down to 0). A race publishes two gathers: harmless.
    if not cache.add(GATHER_PENDING_KEY, time.time() + 0.8 * delay, timeout=max(delay, 1.0)):
        if cache.get(GATHER_PENDING_KEY, 0.0) > time.time():
            return False
        cache.set(GATHER_PENDING_KEY, time.time() + 0.8 * delay, timeout=max(delay, 1.0))
    if not publish(gather, countdown=delay, what="a single message waits for the sweeper"):
        cache.delete(GATHER_PENDING_KEY)
        return False
    return True


@dataclass(frozen=True)
class SweepResult:
    received_enqueued: int
    stuck_requeued: int
    claims_recovered: int = 0
    stuck_failed: int = 0  # taken and left unscored MAX_SWEEP_REQUEUES times: failed


def messages_sweep(*, now=None, limit: int = 20_000) -> SweepResult:
    """Re-enqueue work that waits too long, so a broker outage or a killed worker delays work
    but never loses it: `received` messages (as a gather does), the batches of worker processes
    that are gone (their claims: split and published again, scoring.services.claims), and `queued`
    messages older than STUCK_AFTER_SECONDS (their task may be lost); flagged `scored` messages
    whose explanation never came are the explanations sweeper's
    (explanations.services.queueing.explanations_sweep). Waiting is never a failure: a duplicate task is a
    cheap no-op (scoring is idempotent). What fails: a message that crashes its worker alone
    MAX_ATTEMPTS times, and a `queued` message that a worker took and left unscored (a model that
    cannot be loaded, say) MAX_SWEEP_REQUEUES times, each time published again here (counted in
    `requeues` only when the message was taken since its last publish, `taken_at`: a backlog on
    the broker, or no worker at all, only delays)."""
    from scoring.services.claims import work_claims_recover

    now = now or timezone.now()
    stuck_before = now - timedelta(seconds=settings.STUCK_AFTER_SECONDS)
    received_enqueued = messages_gather(limit=limit)
    claims_recovered = work_claims_recover()
    stuck_ids = list(
        Message.objects.filter(status=MessageStatus.QUEUED, queued_at__lt=stuck_before)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    given_up = _give_up(stuck_ids)
    stuck_ids = [i for i in stuck_ids if i not in given_up]
    stuck_requeued = _republish(stuck_ids, now=now, count=True)
    return SweepResult(received_enqueued, stuck_requeued, claims_recovered, len(given_up))


def _give_up(ids: list[int]) -> set[int]:
    """Of these stuck `queued` messages, fail those a worker took and left unscored
    MAX_SWEEP_REQUEUES times, each time published again by the sweeper (0: no limit), with the
    reason, so they show on /monitoring/failed/ (where a retry, audited, sends them back); returns
    their ids. A message whose task waits on the broker (a backlog, no worker) is never counted."""
    limit = settings.MAX_SWEEP_REQUEUES
    if not limit:
        return set()
    exhausted = list(
        Message.objects.filter(id__in=ids, status=MessageStatus.QUEUED, requeues__gte=limit)
        .only("id", "requeues", "status_reason")
        .order_by("id")
    )
    for message in exhausted:
        reason = (
            f"a worker took its scoring task and left it unscored {message.requeues} times, each time "
            f"published again by the sweeper; last: {message.status_reason or 'no reason recorded'}"
        )
        logger.warning("message %d failed: %s", message.pk, reason)
        messages_transition(
            message_ids=[message.pk],
            from_statuses=[MessageStatus.QUEUED],
            to_status=MessageStatus.FAILED,
            reason=reason[:2000],
        )
    return {m.pk for m in exhausted}


def _republish(ids: list[int], *, now, countdown: float | None = None, count: bool = False) -> int:
    """Publish scoring tasks again (`countdown` seconds from now) for messages that are already
    queued (queued -> queued, restarting their clock; `count`: the sweeper's publishes, counted in
    `requeues`); a failed publish leaves them for the next sweep."""
    from scoring.tasks import score_batch

    published = 0
    for chunk in chunks(ids, settings.SCORING_BATCH_SIZE):
        if not publish(
            score_batch,
            args=[chunk],
            queue=settings.SCORING_QUEUE,
            countdown=countdown,
            what=f"{len(chunk)} queued messages wait for the next sweep",
        ):
            break
        # Counted only when a worker took the message since it was last published (the UPDATE
        # reads the old queued_at): one still waiting on the broker is not stuck by its own doing.
        taken = Q(taken_at__isnull=False, taken_at__gt=F("queued_at"))
        counted = (
            {
                "requeues": Case(
                    When(taken, then=F("requeues") + 1),
                    default=F("requeues"),
                    output_field=PositiveSmallIntegerField(),
                )
            }
            if count
            else {}
        )
        Message.objects.filter(id__in=chunk, status=MessageStatus.QUEUED).update(
            queued_at=now, updated_at=now, **counted
        )
        published += len(chunk)
    return published
