"""Work claims: which worker process computes which batch, and what happens when it dies.

A model task (scoring, explaining) writes a WorkClaim for the messages it is about to compute,
committed before the work starts, and deletes it in the transaction that writes the results.
The claim holds the process's host key and PID (scoring.liveness) and a heartbeat that a thread
of the process refreshes every WORK_CLAIM_HEARTBEAT_SECONDS.

A claim left behind by a process that is gone is a batch that crashed its worker (killed by
the OOM killer, a segfault, SIGKILL, Celery's hard time limit) or that ran past the soft time
limit. It is found by the next delivery of any overlapping batch or by the sweeper, at once for
a process of this host (a PID check) and after WORK_CLAIM_STALE_SECONDS for one elsewhere; then:

- a batch of several messages is split in two and both halves are published again, uncharged:
  one poison message among 256 is alone after 8 splits, and every other message is computed;
- a message that crashed alone is charged one attempt (`Message.attempts` for scoring,
  `explain_attempts` for explaining) and published again; at MAX_ATTEMPTS scoring fails it with
  the reason, and explaining records an explanation failure and sends it to review
  (explanations.services.explain).

What is not a crash charges nothing: a transient database error (the task retries, and its
retry takes over the claim of its earlier try), a device that cannot be used or runs out of
memory, a model that cannot be loaded (loaded before the claim is written). Another live process
holding some of the messages (a duplicate delivery) makes this one skip them.

Why claims and not the broker: with `make run`'s filesystem transport a message taken by a worker
exists only in that worker's memory, so a SIGKILLed worker loses it; Redis gives it back only after
its visibility timeout; and neither counts deliveries, so `reject_on_worker_lost` requeues a
poison batch for ever (celery/celery discussion #8969)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from scoring.constants import MessageStatus
from scoring.liveness import ClaimHolder, claim_is_dead, current_host_key
from scoring.models import Message, WorkClaim, WorkStage
from scoring.services.transitions import messages_transition

logger = logging.getLogger(__name__)

# The status a message waits in for each stage's work.
WAITING_FOR = {WorkStage.SCORE: MessageStatus.QUEUED, WorkStage.EXPLAIN: MessageStatus.SCORED}
ATTEMPT_FIELD = {WorkStage.SCORE: "attempts", WorkStage.EXPLAIN: "explain_attempts"}
VERB = {WorkStage.SCORE: "scoring", WorkStage.EXPLAIN: "explaining"}


@dataclass(frozen=True)
class Claimant:
    """The process that starts a batch: this one by default. A Celery task adds its node name,
    task id and try (its retries), and asks for a heartbeat."""

    host_key: str
    pid: int
    node: str = ""
    task_id: str = ""
    task_try: int = 0
    heartbeat: bool = False

    @classmethod
    def here(cls, **fields: object) -> Claimant:
        return cls(host_key=current_host_key(), pid=os.getpid(), **fields)  # type: ignore[arg-type]

    @classmethod
    def of_task(cls, task) -> Claimant:
        request = task.request
        return cls.here(
            node=request.hostname or "",
            task_id=request.id or "",
            task_try=request.retries or 0,
            heartbeat=True,
        )


@dataclass
class ClaimStart:
    """What a batch's process does: `work` under `claim`; `busy`: held by another live process
    (skipped); `recovered`: left by a dead one, split and published again (or charged)."""

    claim: WorkClaim | None
    work: list[int]
    busy: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)


def work_claim_begin(*, stage: str, message_ids: Sequence[int], claimant: Claimant) -> ClaimStart:
    """Claim `message_ids` for `claimant` (committed at once when not inside a transaction, so
    that the claim outlives a crash). Overlapping claims are settled first: one left by a dead
    process is recovered (module docstring), one of a live process keeps its messages (this
    batch skips them), and one of the same task's earlier try (it ended in a retry) or of this
    very process (it ended without cleaning up, not in a crash) is dropped uncharged."""
    ids = sorted({int(i) for i in message_ids})
    wanted = set(ids)
    busy: set[int] = set()
    recovered: set[int] = set()
    now = timezone.now()
    for other in WorkClaim.objects.filter(stage=stage):  # about one per busy worker process
        overlap = wanted & set(other.message_ids)
        if not overlap:
            continue
        if _ended_without_crash(other, claimant):
            WorkClaim.objects.filter(pk=other.pk).delete()
        elif _is_dead(other, now=now):
            _recover(other, reason=_death_reason(other))
            recovered |= overlap
        else:
            busy |= overlap
    work = [i for i in ids if i not in busy and i not in recovered]
    claim = None
    if work:
        claim = WorkClaim.objects.create(
            stage=stage,
            message_ids=work,
            node=claimant.node,
            host_key=claimant.host_key,
            pid=claimant.pid,
            task_id=claimant.task_id,
            task_try=claimant.task_try,
            started_at=now,
            heartbeat_at=now,
        )
    return ClaimStart(claim, work, sorted(busy), sorted(recovered))


def work_claim_end(*, claim: WorkClaim | None) -> None:
    """The batch ended without a crash: forget its claim (call it inside the transaction that
    writes the results, so that both or neither happen)."""
    if claim is not None:
        WorkClaim.objects.filter(pk=claim.pk).delete()


def work_claim_release(*, claim: WorkClaim | None) -> None:
    """Best effort, outside the results' transaction: the batch ended in an error that is not a
    crash (a transient database error, a failing device). When the database is down the claim
    stays; the task's retry drops it (work_claim_begin)."""
    try:
        work_claim_end(claim=claim)
    except Exception as exc:
        logger.warning("could not release the claim of a batch: %s", exc)


def work_claim_crashed(*, claim: WorkClaim | None, reason: str) -> int:
    """The batch under `claim` crashed without killing its process (it ran past the soft time
    limit, or raised something unexpected): recover it as if its process had died. Returns how
    many messages were split off or charged."""
    if claim is None:
        return 0
    return _recover(claim, reason=reason)


def work_claims_recover(*, limit: int = 1000) -> int:
    """The sweeper's part: recover every claim whose process is gone (module docstring), so a
    batch a killed worker took with it is computed again within a sweep on this host, or
    WORK_CLAIM_STALE_SECONDS later elsewhere, on any broker. Returns how many claims."""
    now = timezone.now()
    recovered = 0
    for claim in WorkClaim.objects.all()[:limit]:
        if _is_dead(claim, now=now) and _recover(claim, reason=_death_reason(claim)) is not None:
            recovered += 1
    return recovered


@contextmanager
def work_claim_heartbeat(*, claim: WorkClaim | None, enabled: bool) -> Iterator[None]:
    """While the block runs, a thread refreshes the claim's heartbeat every
    WORK_CLAIM_HEARTBEAT_SECONDS, so that a process elsewhere can tell a long batch from a dead
    one. Off (`enabled=False`) outside workers: the tests' and commands' own processes."""
    if claim is None or not enabled:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.WORK_CLAIM_HEARTBEAT_SECONDS):
                try:
                    WorkClaim.objects.filter(pk=claim.pk).update(heartbeat_at=timezone.now())
                except Exception as exc:  # the database blinked: the next beat tries again
                    logger.warning("claim %s: heartbeat not written: %s", claim.pk, exc)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"claim-heartbeat-{claim.pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def _ended_without_crash(claim: WorkClaim, claimant: Claimant) -> bool:
    retried = bool(claim.task_id) and claim.task_id == claimant.task_id and claim.task_try < claimant.task_try
    mine = claim.host_key == claimant.host_key and claim.pid == claimant.pid
    return retried or mine


def _is_dead(claim: WorkClaim, *, now) -> bool:
    holder = ClaimHolder(
        host_key=claim.host_key, pid=claim.pid, heartbeat_age_s=(now - claim.heartbeat_at).total_seconds()
    )
    return claim_is_dead(holder, here=current_host_key(), stale_after_s=settings.WORK_CLAIM_STALE_SECONDS)


def _death_reason(claim: WorkClaim) -> str:
    where = claim.node or claim.host_key
    return (
        f"the worker process {where} pid {claim.pid} died, was killed or hung while {VERB[claim.stage]} "
        f"it (started {claim.started_at:%Y-%m-%d %H:%M:%S} UTC)"
    )


def _recover(claim: WorkClaim, *, reason: str) -> int | None:
    """Split the claim's waiting messages in two and publish both halves again; charge a message
    that was alone. Returns how many messages, or None when another process recovered it first."""
    stage = WorkStage(claim.stage)
    with transaction.atomic():
        if not WorkClaim.objects.filter(pk=claim.pk).delete()[0]:
            return None
        ids = list(
            Message.objects.filter(id__in=claim.message_ids, status=WAITING_FOR[stage])
            .order_by("id")
            .values_list("id", flat=True)
        )
        if len(ids) > 1:
            middle = len(ids) // 2
            halves = [ids[:middle], ids[middle:]]
            logger.warning(
                "a %s batch of %d messages crashed (%s): split into %d + %d",
                VERB[stage],
                len(ids),
                reason,
                len(halves[0]),
                len(halves[1]),
            )
            transaction.on_commit(lambda: [_publish_again(stage, half) for half in halves])
        elif ids:
            _charge(stage, ids[0], reason=reason)
    return len(ids)


def _charge(stage: WorkStage, message_id: int, *, reason: str) -> None:
    """One more crash of `message_id` alone: published again, or failed at MAX_ATTEMPTS (scoring;
    an explanation's failure is recorded by the explanation service when it next sees it)."""
    name = ATTEMPT_FIELD[stage]
    message = Message.objects.select_for_update().get(pk=message_id)
    attempts = getattr(message, name) + 1
    note = f"{reason} ({attempts} of {settings.MAX_ATTEMPTS} attempts)"
    logger.warning("message %d crashed its batch alone: %s", message_id, note)
    Message.objects.filter(pk=message_id).update(**{name: attempts, "status_reason": note[:2000]})
    if stage == WorkStage.SCORE and attempts >= settings.MAX_ATTEMPTS:
        messages_transition(
            message_ids=[message_id],
            from_statuses=[MessageStatus.QUEUED],
            to_status=MessageStatus.FAILED,
            reason=(
                f"scoring crashed or timed out its worker {attempts} times with this message alone; "
                f"last: {reason}"
            )[:2000],
        )
        return
    transaction.on_commit(lambda: _publish_again(stage, [message_id]))


def _publish_again(stage: WorkStage, ids: list[int]) -> int:
    """Publish a part of a crashed batch as a task of its own (its clock restarts, so the
    sweeper does not publish it too); a failed publish leaves it to the sweeper."""
    from explanations.services.queueing import messages_enqueue_explanation
    from scoring.services.queueing import _republish

    now = timezone.now()
    if stage == WorkStage.SCORE:
        return _republish(ids, now=now)
    Message.objects.filter(id__in=ids, status=MessageStatus.SCORED).update(scored_at=now, updated_at=now)
    return messages_enqueue_explanation(message_ids=ids)
