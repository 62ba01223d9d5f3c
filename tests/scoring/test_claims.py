"""Work that cannot be poisoned (scoring.services.claims, scoring.services.pipeline): a batch that
crashes its worker is split until the message that crashes it is alone, only that one is charged,
and nothing that is not a crash charges anybody. Worker processes are simulated in process: a
"crash" is an exception no handler catches (as a killed process runs no handler), and the PIDs
of the crashed "processes" are dead ones."""

from __future__ import annotations

import itertools
import math
import os
from datetime import timedelta
from unittest import mock

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import OperationalError
from django.test import override_settings
from django.utils import timezone

from scoring.classifier.loading import get_scorer
from scoring.constants import MessageStatus
from scoring.liveness import ClaimHolder, claim_is_dead, current_host_key, process_alive
from scoring.models import Message, Prediction, WorkClaim, WorkStage
from scoring.services.claims import Claimant, work_claim_begin
from scoring.services.pipeline import messages_score_batch
from scoring.services.queueing import messages_sweep
from tests.factories import MessageFactory

pytestmark = pytest.mark.django_db

NEUTRAL = "Lunch is at noon in the main meeting room, see you there (note {i})."
POISON = "This text takes the worker down with it."
SCORED_OR_LATER = [s for s in MessageStatus.values if s not in (MessageStatus.RECEIVED, MessageStatus.QUEUED)]
DEAD_PIDS = itertools.count(5_000_000)  # above Linux's highest pid_max (2**22): never a live process


class WorkerDied(BaseException):
    """What a SIGKILL, a segfault or the OOM killer looks like from inside: no handler runs."""


@pytest.fixture(autouse=True)
def no_explanations():
    with mock.patch("explanations.services.queueing.messages_enqueue_explanation"):
        yield


@pytest.fixture
def broker():
    """The gpu queue of scoring tasks, in order: what the code under test publishes lands here."""
    queue: list[list[int]] = []
    with mock.patch(
        "scoring.tasks.score_batch.apply_async",
        side_effect=lambda args, **kwargs: queue.append(list(args[0])),
    ):
        yield queue


def queued(body: str) -> Message:
    return MessageFactory(body=body, status=MessageStatus.QUEUED, queued_at=timezone.now())


def a_worker_process() -> Claimant:
    """A worker process on this host; it will be dead by the time anybody looks at its claim."""
    return Claimant(host_key=current_host_key(), pid=next(DEAD_PIDS), node="gpu@test")


class PoisonedScorer:
    """The tiny model's Scorer, except that `poison` kills the worker (or raises `error`)."""

    def __init__(self, scorer, poison: str, error: BaseException | None = None) -> None:
        self.scorer, self.poison, self.error = scorer, poison, error or WorkerDied()
        self.segmented = scorer.segmented
        self.calls = 0

    def score(self, bodies):
        self.calls += 1
        if self.poison in bodies:
            raise self.error
        return self.scorer.score(bodies)


def deliver_until_done(broker: list[list[int]], scorer, capture) -> int:
    """Run every published batch as a worker process would, until nothing is left; a batch whose
    worker died comes back (acks_late, reject_on_worker_lost). Returns how many crashed."""
    crashes = 0
    while broker:
        batch = broker.pop(0)
        try:
            with capture(execute=True):
                messages_score_batch(
                    message_ids=batch, scorer_factory=lambda v: scorer, claimant=a_worker_process()
                )
        except WorkerDied:
            crashes += 1
            broker.append(batch)
        assert crashes < 100, "the poison batch never settles"
    return crashes


def test_one_poison_message_among_255_good_ones_fails_alone_and_the_255_are_scored(
    tiny_model_version, broker, django_capture_on_commit_callbacks
):
    # given: a full batch in which one message crashes the worker every time it is scored
    good = [queued(NEUTRAL.format(i=i)) for i in range(255)]
    poison = queued(POISON)
    ids = sorted(m.pk for m in [*good, poison])
    broker.append(ids)
    scorer = PoisonedScorer(get_scorer(tiny_model_version), POISON)

    # when
    crashes = deliver_until_done(broker, scorer, django_capture_on_commit_callbacks)

    # then
    good_ids = [m.pk for m in good]
    assert Message.objects.filter(id__in=good_ids, status__in=SCORED_OR_LATER).count() == 255
    assert Prediction.objects.filter(message_id__in=good_ids).count() == 255
    assert set(Message.objects.filter(id__in=good_ids).values_list("attempts", flat=True)) == {0}
    poison.refresh_from_db()
    assert poison.status == MessageStatus.FAILED and poison.attempts == 5
    assert "crashed or timed out its worker 5 times with this message alone" in poison.status_reason
    assert "gpu@test" in poison.status_reason
    assert not Prediction.objects.filter(message=poison).exists()
    # bisection: 8 halvings down to the poison alone, then 5 charged crashes; nothing left claimed
    assert crashes == int(math.log2(256)) + 5
    assert not WorkClaim.objects.exists()


def test_a_text_the_scorer_raises_on_fails_alone_in_a_logarithmic_number_of_calls(tiny_model_version):
    messages = [queued(NEUTRAL.format(i=i)) for i in range(63)] + [queued(POISON)]
    scorer = PoisonedScorer(get_scorer(tiny_model_version), POISON, error=ValueError("tokenizer exploded"))

    outcome = messages_score_batch(message_ids=[m.pk for m in messages], scorer_factory=lambda v: scorer)

    assert (outcome.scored, outcome.failed) == (63, 1)
    failed = Message.objects.get(status=MessageStatus.FAILED)
    assert failed.body == POISON and "tokenizer exploded" in failed.status_reason and failed.attempts == 0
    assert scorer.calls == 2 * int(math.log2(64)) + 1, "split in halves, not retried one by one"


def test_transient_database_errors_retry_without_charging_anyone(tiny_model_version):
    messages = [queued(NEUTRAL.format(i=i)) for i in range(3)]
    ids = [m.pk for m in messages]

    with mock.patch.object(
        Prediction.objects, "bulk_create", side_effect=OperationalError("database is locked")
    ):
        for _ in range(7):  # more retries than MAX_ATTEMPTS
            with pytest.raises(OperationalError):
                messages_score_batch(message_ids=ids)
    assert not WorkClaim.objects.exists(), "the claim is released: the retry is no crash"
    outcome = messages_score_batch(message_ids=ids)

    assert outcome.scored == 3
    assert set(Message.objects.filter(id__in=ids).values_list("attempts", flat=True)) == {0}


def test_a_retry_takes_over_the_claim_its_earlier_try_could_not_release(tiny_model_version):
    message = queued(NEUTRAL.format(i=0))
    alive_elsewhere = os.getppid()  # a live process: its claim is not a crash
    WorkClaim.objects.create(
        stage=WorkStage.SCORE, message_ids=[message.pk], host_key=current_host_key(), pid=alive_elsewhere,
        task_id="task-1", task_try=0, started_at=timezone.now(), heartbeat_at=timezone.now(),
    )  # fmt: skip
    retry = Claimant(host_key=current_host_key(), pid=alive_elsewhere, task_id="task-1", task_try=1)

    outcome = messages_score_batch(message_ids=[message.pk], claimant=retry)

    assert outcome.scored == 1 and not WorkClaim.objects.exists()
    assert Message.objects.get(pk=message.pk).attempts == 0


def test_a_duplicate_delivery_skips_what_a_live_worker_process_holds(tiny_model_version):
    held, free = queued(NEUTRAL.format(i=1)), queued(NEUTRAL.format(i=2))
    WorkClaim.objects.create(
        stage=WorkStage.SCORE, message_ids=[held.pk], host_key=current_host_key(), pid=os.getppid(),
        started_at=timezone.now(), heartbeat_at=timezone.now(),
    )  # fmt: skip

    outcome = messages_score_batch(message_ids=[held.pk, free.pk])

    assert (outcome.scored, outcome.skipped) == (1, 1)
    assert Message.objects.get(pk=held.pk).status == MessageStatus.QUEUED
    assert WorkClaim.objects.filter(message_ids=[held.pk]).exists(), "the live claim is left alone"


def test_a_batch_past_the_soft_time_limit_is_split_and_a_message_alone_is_charged(
    tiny_model_version, broker, django_capture_on_commit_callbacks
):
    slow = [queued(NEUTRAL.format(i=i)) for i in range(4)]
    scorer = PoisonedScorer(get_scorer(tiny_model_version), slow[0].body, error=SoftTimeLimitExceeded())

    with django_capture_on_commit_callbacks(execute=True):
        outcome = messages_score_batch(message_ids=[m.pk for m in slow], scorer_factory=lambda v: scorer)
    assert outcome.scored == 0 and broker == [[slow[0].pk, slow[1].pk], [slow[2].pk, slow[3].pk]]
    assert set(Message.objects.filter(pk__in=[m.pk for m in slow]).values_list("attempts", flat=True)) == {0}

    with django_capture_on_commit_callbacks(execute=True):
        messages_score_batch(message_ids=[slow[0].pk], scorer_factory=lambda v: scorer)
    alone = Message.objects.get(pk=slow[0].pk)
    assert alone.status == MessageStatus.QUEUED and alone.attempts == 1
    assert "soft time limit" in alone.status_reason and broker[-1] == [alone.pk]


def test_the_sweeper_recovers_the_batch_of_a_dead_worker_process_and_leaves_live_ones_alone(
    broker, django_capture_on_commit_callbacks
):
    now = timezone.now()
    lost = [queued(NEUTRAL.format(i=i)).pk for i in range(3)]
    busy, far_busy, far_lost = (queued(NEUTRAL.format(i=i)).pk for i in range(3, 6))

    def claim(ids, *, host_key, pid, heartbeat_age_s=0.0):
        WorkClaim.objects.create(
            stage=WorkStage.SCORE, message_ids=ids, host_key=host_key, pid=pid, node="gpu0@box",
            started_at=now, heartbeat_at=now - timedelta(seconds=heartbeat_age_s),
        )  # fmt: skip

    claim(lost, host_key=current_host_key(), pid=next(DEAD_PIDS))  # this host: its PID is gone
    claim([busy], host_key=current_host_key(), pid=os.getppid())  # this host: alive
    claim([far_busy], host_key="other-box/pid:[1]", pid=1, heartbeat_age_s=5)  # elsewhere, beating
    claim([far_lost], host_key="other-box/pid:[1]", pid=1, heartbeat_age_s=600)  # elsewhere, silent

    with (
        override_settings(WORK_CLAIM_STALE_SECONDS=60),
        mock.patch("explanations.tasks.explain_batch.apply_async"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        result = messages_sweep(now=now)

    assert result.claims_recovered == 2 and result.stuck_requeued == 0
    assert sorted(broker) == sorted([lost[:1], lost[1:], [far_lost]])
    assert set(WorkClaim.objects.values_list("pid", flat=True)) == {os.getppid(), 1}
    assert Message.objects.get(pk=far_lost).attempts == 1, "a message alone in a dead batch is charged"
    assert set(Message.objects.filter(pk__in=lost).values_list("attempts", flat=True)) == {0}


def test_a_claim_is_dead_when_its_pid_is_gone_here_or_its_heartbeat_is_stale_anywhere():
    here = current_host_key()
    assert process_alive(os.getpid()) and not process_alive(next(DEAD_PIDS))
    assert not claim_is_dead(ClaimHolder(here, os.getpid(), 1.0), here=here, stale_after_s=60)
    assert claim_is_dead(ClaimHolder(here, next(DEAD_PIDS), 1.0), here=here, stale_after_s=60)
    # another host or container: its PIDs mean nothing here, only the heartbeat says
    assert not claim_is_dead(ClaimHolder("box/pid:[9]", next(DEAD_PIDS), 1.0), here=here, stale_after_s=60)
    assert claim_is_dead(ClaimHolder("box/pid:[9]", os.getpid(), 61.0), here=here, stale_after_s=60)


def test_claiming_settles_overlapping_claims_first():
    ids = [queued(NEUTRAL.format(i=i)).pk for i in range(4)]
    WorkClaim.objects.create(
        stage=WorkStage.SCORE, message_ids=ids[:2], host_key=current_host_key(), pid=os.getppid(),
        started_at=timezone.now(), heartbeat_at=timezone.now(),
    )  # fmt: skip

    start = work_claim_begin(stage=WorkStage.SCORE, message_ids=ids, claimant=a_worker_process())

    assert start.busy == ids[:2] and start.work == ids[2:] and start.claim.message_ids == ids[2:]
