"""Explanations cannot loop for ever (explanations.services.explain, scoring.services.claims): a
batch whose explanation crashes its worker is split until the message that does it is alone; that
message is charged, and at MAX_ATTEMPTS it reaches review with a recorded "explanation failed";
the tasks have time limits; a flagged message whose explanation task was lost is explained after
the sweeper finds it; neither device memory nor the sweeper can keep a message `scored` for ever
(MAX_OOM_DEFERRALS, MAX_SWEEP_REQUEUES) (tiny model, worker processes simulated in process as in
tests/scoring/test_claims.py)."""

from __future__ import annotations

import itertools
from datetime import timedelta
from unittest import mock

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

import explanations.services.explain as explain_service
from explanations.models import Explanation, ExplanationStatus
from explanations.services import messages_explain_batch
from explanations.services.queueing import explanations_sweep
from explanations.tasks import explain_batch
from governance.services.model_versions import model_version_activate, model_version_with_threshold
from scoring.constants import MessageStatus
from scoring.liveness import current_host_key
from scoring.models import Message, WorkClaim
from scoring.services.claims import Claimant
from scoring.services.pipeline import messages_score_batch
from scoring.tasks import score_batch
from tests.factories import MessageFactory

pytestmark = pytest.mark.django_db

CLAIMS = [
    "Your returns are guaranteed at 12 percent every year.",
    "This investment is completely risk-free.",
    "We guarantee a 9% annual return on this fund.",
    "The SEC approved this fund for all investors.",
]
DEAD_PIDS = itertools.count(6_000_000)  # above Linux's highest pid_max (2**22): never a live process


class WorkerDied(BaseException):
    """A killed worker process: no handler runs."""


@pytest.fixture(autouse=True)
def quick(settings):
    settings.QA_SAMPLE_RATE = 0.0
    settings.IG_N_STEPS = 8
    settings.IG_REFINE_DOUBLINGS = 0
    settings.MAX_ATTEMPTS = 2


@pytest.fixture
def flag_everything(tiny_model_version):
    variant = model_version_with_threshold(version=tiny_model_version, threshold=0.0, reason="test routing")
    model_version_activate(version=variant, reason="test routing")
    return variant


@pytest.fixture
def gpu_queue():
    """The explanation tasks the code under test publishes, in order."""
    queue: list[list[int]] = []
    with mock.patch(
        "explanations.tasks.explain_batch.apply_async",
        side_effect=lambda args, **kwargs: queue.append(list(args[0])),
    ):
        yield queue


def scored(bodies: list[str]) -> list[int]:
    """Messages scored by the real pipeline and left `scored`, waiting for their explanation."""
    ids = [MessageFactory(body=body, status=MessageStatus.QUEUED).pk for body in bodies]
    with mock.patch("explanations.services.queueing.messages_enqueue_explanation"):
        messages_score_batch(message_ids=ids)
    assert Message.objects.filter(id__in=ids, status=MessageStatus.SCORED).count() == len(ids)
    return ids


def explaining_crashes_on(poison: str):
    real = explain_service.explain_messages

    def explain(scorer, items, **options):
        if any(item.body == poison for item in items):
            raise WorkerDied()
        return real(scorer, items, **options)

    return mock.patch.object(explain_service, "explain_messages", explain)


def test_an_explanation_that_crashes_its_worker_is_charged_alone_and_reaches_review_as_failed(
    flag_everything, gpu_queue, django_capture_on_commit_callbacks, reviewer
):
    # given four flagged messages; explaining the last one kills the worker every time
    ids = scored(CLAIMS)
    poison = Message.objects.get(body=CLAIMS[3])
    gpu_queue.append(ids)
    crashes = 0
    # when the broker delivers every batch (a crashed one again) until nothing is left
    with explaining_crashes_on(CLAIMS[3]):
        while gpu_queue:
            batch = gpu_queue.pop(0)
            worker = Claimant(host_key=current_host_key(), pid=next(DEAD_PIDS), node="gpu@test")
            try:
                with django_capture_on_commit_callbacks(execute=True):
                    messages_explain_batch(message_ids=batch, claimant=worker)
            except WorkerDied:
                crashes += 1
                gpu_queue.append(batch)
            assert crashes < 20, "the explanation loops"

    # then the three others were explained, and the poison reached review without a highlight
    assert crashes == 2 + 2  # split 4 -> 2 -> 1, then MAX_ATTEMPTS (2) crashes alone
    assert Message.objects.filter(id__in=ids, status=MessageStatus.IN_REVIEW).count() == 4
    assert Explanation.objects.filter(status=ExplanationStatus.OK).exclude(message=poison).count() == 6
    poison.refresh_from_db()
    assert poison.explain_attempts == 2 and poison.explained_at is None
    expected = "explanation failed: explaining crashed or timed out its worker 2 times"
    assert poison.status_reason.startswith(expected)
    failures = Explanation.objects.filter(message=poison)
    assert failures.count() == 2 and {e.status for e in failures} == {ExplanationStatus.FAILED}
    assert "gpu@test" in failures[0].failure_reason
    assert not WorkClaim.objects.exists()
    client = Client()
    client.force_login(reviewer)
    html = client.get(reverse("reviews:message", args=[poison.pk])).content.decode()
    assert "Explanation failed:" in html and "crashed or timed out its worker 2 times" in html
    assert "No words are coloured" in html


def test_an_exception_explaining_one_message_fails_that_message_alone(flag_everything):
    ids = scored(CLAIMS[:3])
    real = explain_service.explain_messages

    def explain(scorer, items, **options):
        if any(item.body == CLAIMS[1] for item in items):
            raise ValueError("the tokenizer choked")
        return real(scorer, items, **options)

    with mock.patch.object(explain_service, "explain_messages", explain):
        outcome = messages_explain_batch(message_ids=ids)

    assert outcome == {"explained": 2, "failed": 1, "deferred": 0, "skipped": 0}
    bad = Message.objects.get(body=CLAIMS[1])
    assert bad.status == MessageStatus.IN_REVIEW and "the tokenizer choked" in bad.status_reason
    assert bad.explain_attempts == 0, "an exception is a recorded failure, not a crash"


def test_the_model_tasks_have_the_time_limits_of_the_settings(settings):
    assert (score_batch.soft_time_limit, score_batch.time_limit) == (
        settings.SCORING_SOFT_TIME_LIMIT_SECONDS,
        settings.SCORING_TIME_LIMIT_SECONDS,
    )
    assert (explain_batch.soft_time_limit, explain_batch.time_limit) == (
        settings.EXPLAIN_SOFT_TIME_LIMIT_SECONDS,
        settings.EXPLAIN_TIME_LIMIT_SECONDS,
    )
    assert explain_batch.soft_time_limit < explain_batch.time_limit


def test_a_flagged_message_whose_explanation_task_was_lost_is_explained_after_the_sweep(
    flag_everything, gpu_queue, settings
):
    # given a flagged message whose explanation task never arrived, and one still in time
    lost, fresh = scored(CLAIMS[:2])
    Message.objects.filter(pk=lost).update(scored_at=timezone.now() - timedelta(seconds=301))
    settings.STUCK_AFTER_SECONDS = 300
    # when the sweeper runs
    with mock.patch("scoring.tasks.score_batch.apply_async"):
        result = explanations_sweep()
    # then it publishes the lost one only, and that task takes it to review with its explanation
    assert result.explanations_requeued == 1 and gpu_queue == [[lost]]
    assert Message.objects.get(pk=lost).scored_at > timezone.now() - timedelta(seconds=60), "clock restarted"
    messages_explain_batch(message_ids=gpu_queue.pop())
    message = Message.objects.get(pk=lost)
    assert message.status == MessageStatus.IN_REVIEW and message.explained_at is not None
    assert Explanation.objects.filter(message=message, status=ExplanationStatus.OK).count() == 2
    assert Message.objects.get(pk=fresh).status == MessageStatus.SCORED


def test_a_message_whose_explanation_never_fits_in_device_memory_reaches_review_after_max_oom_deferrals(
    flag_everything, gpu_queue, django_capture_on_commit_callbacks, settings, reviewer
):
    # given a flagged message that no worker has the device memory to explain, even alone
    from scoring.errors import DeviceOutOfMemory

    settings.MAX_OOM_DEFERRALS = 3
    (big,) = scored([CLAIMS[0]])
    real = explain_service.explain_messages

    def explain(scorer, items, **options):
        if any(item.body == CLAIMS[0] for item in items):
            raise DeviceOutOfMemory("Integrated Gradients of one text does not fit in cuda:0's free memory")
        return real(scorer, items, **options)

    gpu_queue.append([big])
    outcomes = []
    # when the broker delivers it each time it is published again
    with mock.patch.object(explain_service, "explain_messages", explain):
        while gpu_queue:
            with django_capture_on_commit_callbacks(execute=True):
                outcomes.append(messages_explain_batch(message_ids=gpu_queue.pop(0)))
            assert len(outcomes) <= 10, "the out-of-memory explanation loops"

    # then it is deferred twice and, on its third try, reaches review with a recorded failure
    assert [(o["deferred"], o["failed"]) for o in outcomes] == [(1, 0), (1, 0), (0, 1)]
    message = Message.objects.get(pk=big)
    assert message.status == MessageStatus.IN_REVIEW and message.explain_deferrals == 3
    assert message.status_reason.startswith(
        "explanation failed: does not fit in device memory on any worker that tried (3 tries)"
    )
    failures = Explanation.objects.filter(message=message)
    assert failures.count() == 2 and {e.status for e in failures} == {ExplanationStatus.FAILED}
    assert all("does not fit in device memory on any worker" in e.failure_reason for e in failures)
    client = Client()
    client.force_login(reviewer)
    html = client.get(reverse("reviews:message", args=[big])).content.decode()
    assert "Explanation failed:" in html and "does not fit in device memory on any worker" in html


def test_a_flagged_message_taken_and_left_unexplained_max_sweep_requeues_times_reaches_review(
    flag_everything, gpu_queue, settings
):
    from scoring.errors import DeviceFailed

    # given a flagged message whose explanation task every worker takes and leaves unfinished
    settings.MAX_SWEEP_REQUEUES = 2
    settings.STUCK_AFTER_SECONDS = 300
    (lost,) = scored([CLAIMS[0]])

    def broken(scorer, items, **options):
        raise DeviceFailed("CUDA error: unspecified launch failure")

    results = []
    with mock.patch.object(explain_service, "explain_messages", broken):
        for _ in range(3):  # when a worker takes it and fails, and the sweeper finds it stuck
            with pytest.raises(DeviceFailed):
                messages_explain_batch(message_ids=[lost])
            Message.objects.filter(pk=lost).update(scored_at=timezone.now() - timedelta(seconds=301))
            results.append(explanations_sweep())

    # then it is published again MAX_SWEEP_REQUEUES times, then reaches review with a recorded failure
    assert [(r.explanations_requeued, r.explanations_given_up) for r in results] == [(1, 0), (1, 0), (0, 1)]
    assert gpu_queue == [[lost], [lost]]
    message = Message.objects.get(pk=lost)
    assert message.status == MessageStatus.IN_REVIEW and message.explain_requeues == 2
    assert message.status_reason.startswith(
        "explanation failed: a worker took its explanation task and left it unexplained 2 times"
    )
    failures = Explanation.objects.filter(message=message)
    assert failures.count() == 2 and {e.status for e in failures} == {ExplanationStatus.FAILED}


def test_a_flagged_message_waiting_on_the_broker_is_never_sent_to_review_unexplained(
    flag_everything, gpu_queue, settings
):
    # given a backlog on the gpu queue: no worker takes the message's explanation task
    settings.MAX_SWEEP_REQUEUES = 1
    settings.STUCK_AFTER_SECONDS = 300
    (waiting,) = scored([CLAIMS[0]])
    for _ in range(4):
        # time passes: scored (or last published) 301 s ago, taken last by its scoring worker before
        past = timezone.now() - timedelta(seconds=301)
        Message.objects.filter(pk=waiting).update(scored_at=past, taken_at=past - timedelta(seconds=1))
        assert explanations_sweep().explanations_given_up == 0
    # then it is published again at each sweep and still waits for its explanation
    assert gpu_queue == [[waiting]] * 4
    message = Message.objects.get(pk=waiting)
    assert message.status == MessageStatus.SCORED and message.explain_requeues == 0


def test_beat_runs_the_explanations_sweeper_beside_scorings(settings):
    from explanations.tasks import sweep as explain_sweep_task
    from scoring.tasks import sweep as scoring_sweep_task

    schedule = settings.CELERY_BEAT_SCHEDULE
    assert schedule["sweep-pipeline"]["task"] == scoring_sweep_task.name == "scoring.tasks.sweep"
    assert schedule["sweep-explanations"]["task"] == explain_sweep_task.name == "explanations.tasks.sweep"
    assert schedule["sweep-explanations"]["schedule"] == settings.SWEEP_INTERVAL_SECONDS
