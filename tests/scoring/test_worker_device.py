"""A worker that cannot use its device (SCORING_DEVICE=cuda on a host without a usable GPU)
takes no model work and charges no message; a message that does not fit in device memory is
deferred, never failed (scoring.worker, scoring.services.pipeline)."""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

import pytest
import torch
from celery.exceptions import Reject
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from scoring.classifier.device_check import cpu_report, is_device_failure, probe, probe_in_subprocess
from scoring.classifier.loading import get_scorer
from scoring.constants import MessageStatus
from scoring.errors import DeviceFailed, DeviceOutOfMemory, ModelNotReady
from scoring.models import Message, Prediction, WorkerDevice
from scoring.services.pipeline import messages_score_batch
from scoring.worker import check_before_consuming, device_failed, require_usable_device
from tests.factories import MessageFactory

NEUTRAL = "Lunch is at noon in the main meeting room, see you there."
# A device no host has: unusable here (no GPU) and on a GPU machine (no GPU 99) alike.
NO_SUCH_GPU = "cuda:99"


def queued(body: str, **fields) -> Message:
    return MessageFactory(body=body, status=MessageStatus.QUEUED, queued_at=timezone.now(), **fields)


def test_the_probe_says_why_the_device_is_not_usable_and_what_torch_sees(tmp_path, monkeypatch):
    report = probe(NO_SUCH_GPU)
    assert not report.usable and report.reason
    assert report.torch_version == torch.__version__ and report.cuda_version == torch.version.cuda
    monkeypatch.chdir(tmp_path)  # the probe finds the project whatever the worker's directory
    assert probe_in_subprocess(NO_SUCH_GPU) == report
    assert probe("cpu").usable and probe("cpu").device == "cpu"
    assert cpu_report().usable and cpu_report().cuda_available is False  # asks torch nothing of CUDA


@pytest.mark.django_db
def test_a_worker_whose_model_cannot_load_charges_no_attempt(tiny_model_version):
    message = queued(NEUTRAL)

    def no_device(version):
        raise ModelNotReady("Device 'cuda' was asked for but no CUDA GPU is available.")

    for _ in range(6):  # more tries than MAX_ATTEMPTS: still nothing charged, nothing failed
        with pytest.raises(ModelNotReady):
            messages_score_batch(message_ids=[message.pk], scorer_factory=no_device)

    message.refresh_from_db()
    assert message.status == MessageStatus.QUEUED and message.attempts == 0


@pytest.mark.django_db
def test_a_message_that_does_not_fit_in_device_memory_is_deferred_uncharged(
    tiny_model_version, django_capture_on_commit_callbacks
):
    big, small = queued(NEUTRAL + " (the long one)"), queued(NEUTRAL)
    scorer = get_scorer(tiny_model_version)

    class Tight:
        segmented = scorer.segmented

        def score(self, bodies):
            if any("long one" in body for body in bodies):
                raise DeviceOutOfMemory("one window of 128 tokens does not fit in cuda:0's free memory")
            return scorer.score(bodies)

    with (
        mock.patch("explanations.services.queueing.messages_enqueue_explanation"),
        mock.patch("scoring.tasks.score_batch.apply_async") as publish,
        django_capture_on_commit_callbacks(execute=True),
    ):
        outcome = messages_score_batch(message_ids=[big.pk, small.pk], scorer_factory=lambda v: Tight())

    big.refresh_from_db()
    small.refresh_from_db()
    assert (outcome.scored, outcome.failed, outcome.deferred) == (1, 0, 1)
    assert big.status == MessageStatus.QUEUED and big.attempts == 0 and big.status_reason == ""
    assert not Prediction.objects.filter(message=big).exists()
    assert small.status != MessageStatus.QUEUED
    (call,) = publish.call_args_list
    assert call.kwargs["args"] == [[big.pk]] and call.kwargs["countdown"] > 0  # any worker may take it


@pytest.mark.django_db
def test_a_message_that_never_fits_in_device_memory_fails_after_max_oom_deferrals(
    tiny_model_version, django_capture_on_commit_callbacks, settings, admin_user
):
    # given a message no worker has the memory for, and a limit of 3 tries
    settings.MAX_OOM_DEFERRALS = 3
    big = queued(NEUTRAL + " (the long one)")

    class NeverFits:
        segmented = False

        def score(self, bodies):
            raise DeviceOutOfMemory("one window of 128 tokens does not fit in cuda:0's free memory")

    broker: list[list[int]] = [[big.pk]]
    outcomes = []
    # when the broker delivers it each time it is published again
    with mock.patch(
        "scoring.tasks.score_batch.apply_async",
        side_effect=lambda args, **kwargs: broker.append(list(args[0])),
    ):
        while broker:
            with django_capture_on_commit_callbacks(execute=True):
                outcomes.append(
                    messages_score_batch(message_ids=broker.pop(0), scorer_factory=lambda v: NeverFits())
                )
            assert len(outcomes) <= 10, "the out-of-memory message loops"

    # then it was deferred twice and failed on its third try, with the reason, on the failed page
    assert [(o.deferred, o.failed) for o in outcomes] == [(1, 0), (1, 0), (0, 1)]
    big.refresh_from_db()
    assert big.status == MessageStatus.FAILED and big.deferrals == 3 and big.attempts == 0
    assert big.status_reason.startswith("does not fit in device memory on any worker that tried (3 tries)")
    assert "cuda:0's free memory" in big.status_reason
    client = Client()
    client.force_login(admin_user)
    html = client.get(reverse("monitoring:failed")).content.decode()
    assert big.external_id in html and "does not fit in device memory on any worker that tried" in html


def _stuck(message: Message) -> None:
    from datetime import timedelta

    Message.objects.filter(pk=message.pk).update(queued_at=timezone.now() - timedelta(minutes=5))


def _no_model(version):
    raise ModelNotReady("the artifact of v-broken is corrupt: cannot load the tokenizer")


@pytest.mark.django_db
def test_a_message_taken_and_left_unscored_max_sweep_requeues_times_fails_with_the_reason(
    tiny_model_version, settings, admin_user
):
    from scoring.services.failed import message_retry
    from scoring.services.queueing import messages_sweep

    # given a queued message whose model cannot be loaded by any worker that takes its task
    settings.MAX_SWEEP_REQUEUES = 2
    settings.STUCK_AFTER_SECONDS = 60
    message = queued(NEUTRAL)
    results = []
    with mock.patch("scoring.tasks.score_batch.apply_async") as publish:
        for _ in range(3):
            # when a worker takes its task and cannot score it, and the sweeper finds it stuck
            with pytest.raises(ModelNotReady):
                messages_score_batch(message_ids=[message.pk], scorer_factory=_no_model)
            _stuck(message)
            results.append(messages_sweep())
        results.append(messages_sweep())  # failed: left alone

    # then it is published again MAX_SWEEP_REQUEUES times, then failed with the worker's reason
    assert [(r.stuck_requeued, r.stuck_failed) for r in results] == [(1, 0), (1, 0), (0, 1), (0, 0)]
    assert publish.call_count == 2
    message.refresh_from_db()
    assert message.status == MessageStatus.FAILED and message.requeues == 2 and message.attempts == 0
    assert message.status_reason.startswith("a worker took its scoring task and left it unscored 2 times")
    assert "last: not scored: the artifact of v-broken is corrupt" in message.status_reason
    client = Client()
    client.force_login(admin_user)
    html = client.get(reverse("monitoring:failed")).content.decode()
    assert "left it unscored 2 times" in html
    # and an (audited) retry gives it fresh counts
    with mock.patch("scoring.tasks.score_batch.apply_async"):
        message_retry(message=message, user=admin_user, reason="the artifact is restored")
    message.refresh_from_db()
    assert message.status == MessageStatus.QUEUED and message.requeues == 0


@pytest.mark.django_db
def test_a_message_waiting_on_the_broker_is_published_again_at_every_sweep_but_never_failed(settings):
    from scoring.services.queueing import messages_sweep

    # given a backlog (or no worker at all): no worker takes the message's task
    settings.MAX_SWEEP_REQUEUES = 1
    settings.STUCK_AFTER_SECONDS = 60
    message = queued(NEUTRAL)
    with mock.patch("scoring.tasks.score_batch.apply_async") as publish:
        for _ in range(5):
            _stuck(message)
            assert messages_sweep().stuck_failed == 0
    # then it is published again each time, uncounted: waiting only delays
    assert publish.call_count == 5
    message.refresh_from_db()
    assert message.status == MessageStatus.QUEUED and message.requeues == 0


@pytest.mark.django_db
def test_a_broker_outage_does_not_count_as_a_sweeper_requeue(tiny_model_version, settings):
    from scoring.services.queueing import messages_sweep

    settings.MAX_SWEEP_REQUEUES = 1
    settings.STUCK_AFTER_SECONDS = 60
    message = queued(NEUTRAL)
    with mock.patch("scoring.tasks.score_batch.apply_async", side_effect=ConnectionError("broker down")):
        for _ in range(3):
            with pytest.raises(ModelNotReady):
                messages_score_batch(message_ids=[message.pk], scorer_factory=_no_model)
            _stuck(message)
            assert messages_sweep().stuck_failed == 0
    message.refresh_from_db()
    assert message.status == MessageStatus.QUEUED and message.requeues == 0


class _Queues(dict):
    """The part of kombu's queue registry the check uses."""

    def __init__(self, names):
        super().__init__({name: object() for name in names})
        self.consume_from = dict(self)
        self.deselected: list[str] = []

    def deselect(self, name):
        self.deselected.append(name)
        self.consume_from.pop(name, None)


@pytest.mark.django_db
def test_a_worker_that_cannot_use_its_device_does_not_consume_the_model_queues():
    queues = _Queues(["gpu", "checks", "default"])

    with override_settings(SCORING_DEVICE=NO_SUCH_GPU):
        report = check_before_consuming(node="gpu0@host-a", queues=queues)

    assert not report.usable
    assert sorted(queues.deselected) == ["checks", "gpu"] and list(queues.consume_from) == ["default"]
    row = WorkerDevice.objects.get(node="gpu0@host-a")
    assert not row.usable and not row.consuming and row.reason
    assert row.torch_version == torch.__version__ and row.queues == ["checks", "default", "gpu"]


@pytest.mark.django_db
def test_a_cpu_worker_consumes_and_a_worker_without_model_queues_is_not_probed():
    queues = _Queues(["gpu", "default"])
    with override_settings(SCORING_DEVICE="cpu"):
        assert check_before_consuming(node="w@host", queues=queues).usable
    assert queues.deselected == [] and WorkerDevice.objects.get(node="w@host").consuming
    assert check_before_consuming(node="d@host", queues=_Queues(["default"])) is None


@pytest.mark.django_db
def test_a_model_task_in_a_child_without_its_device_goes_back_to_the_queue(monkeypatch):
    cancelled = []
    task = SimpleNamespace(
        name="scoring.tasks.score_batch",
        request=SimpleNamespace(hostname="gpu0@host-b"),
        app=SimpleNamespace(
            control=SimpleNamespace(cancel_consumer=lambda q, destination: cancelled.append((q, destination)))
        ),
    )
    monkeypatch.setattr("scoring.worker._child_reports", {})

    with override_settings(SCORING_DEVICE=NO_SUCH_GPU), pytest.raises(Reject) as rejected:
        require_usable_device(task)

    assert rejected.value.requeue is True and "cannot use its device" in str(rejected.value.reason)
    assert ("gpu", ["gpu0@host-b"]) in cancelled and ("checks", ["gpu0@host-b"]) in cancelled
    assert not WorkerDevice.objects.get(node="gpu0@host-b").consuming
    with override_settings(SCORING_DEVICE="cpu"):
        require_usable_device(task)  # a usable device: nothing happens


@pytest.mark.django_db
def test_healthz_and_the_worker_health_check_name_the_worker_that_cannot_use_its_device(admin_client):
    client = admin_client  # /healthz details are for compliance admins
    import socket

    host = socket.gethostname()
    common = {"requested": "cuda", "torch_version": torch.__version__, "queues": ["gpu"]}
    WorkerDevice.objects.create(node=f"gpu0@{host}", usable=True, consuming=True, device="cuda:0",
                                reported_at=timezone.now(), **common)  # fmt: skip
    call_command("worker_health", node=f"gpu0@{host}")

    WorkerDevice.objects.create(node=f"gpu1@{host}", usable=False, consuming=False, reason="no CUDA GPU",
                                reported_at=timezone.now(), **common)  # fmt: skip
    body = client.get("/healthz").json()
    workers = body["checks"]["workers"]
    assert body["ok"] is False and workers["ok"] is False and f"gpu1@{host}" in workers["error"]
    with pytest.raises(CommandError, match="cannot use its device"):
        call_command("worker_health")
    with pytest.raises(CommandError, match="no device report"):
        call_command("worker_health", node="gpu9@elsewhere")

    with override_settings(WORKER_REPORT_MAX_AGE_SECONDS=60):
        WorkerDevice.objects.filter(node=f"gpu1@{host}").update(
            reported_at=timezone.now() - timezone.timedelta(hours=1)
        )
        assert client.get("/healthz").json()["checks"]["workers"]["ok"] is True  # a stale report


@pytest.mark.django_db
def test_a_device_that_fails_under_a_batch_judges_no_message_and_stops_the_worker(
    tiny_model_version, monkeypatch
):
    first, second = queued(NEUTRAL), queued(NEUTRAL + " again")

    class Broken:
        segmented = True

        def score(self, bodies):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    with pytest.raises(DeviceFailed, match="illegal memory access"):
        messages_score_batch(message_ids=[first.pk, second.pk], scorer_factory=lambda v: Broken())
    for message in (first, second):
        message.refresh_from_db()
        assert (
            message.status == MessageStatus.QUEUED and message.attempts == 0
        )  # nothing judged, nothing charged

    cancelled = []
    task = SimpleNamespace(
        name="scoring.tasks.score_batch",
        request=SimpleNamespace(hostname="gpu0@host-c"),
        app=SimpleNamespace(
            control=SimpleNamespace(cancel_consumer=lambda q, destination: cancelled.append(q))
        ),
    )
    monkeypatch.setattr("scoring.worker._child_reports", {})
    with override_settings(SCORING_DEVICE="cpu"), pytest.raises(Reject):
        device_failed(task, DeviceFailed("CUDA error: an illegal memory access was encountered"))
    assert "gpu" in cancelled and not WorkerDevice.objects.get(node="gpu0@host-c").usable
    with override_settings(SCORING_DEVICE="cpu"), pytest.raises(Reject):
        require_usable_device(task)  # the child remembers: no more model work here


def test_only_accelerator_errors_count_as_a_failed_device():
    assert is_device_failure(RuntimeError("CUDA error: device-side assert triggered"))
    assert is_device_failure(RuntimeError("CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"))
    assert not is_device_failure(torch.OutOfMemoryError("CUDA out of memory"))
    assert not is_device_failure(ValueError("the text is empty"))
    assert not is_device_failure(RuntimeError("shape mismatch"))


@pytest.mark.django_db
def test_a_deferred_message_has_one_retry_in_flight_not_one_more_per_sweep(tiny_model_version):
    from datetime import timedelta

    from scoring.services.queueing import messages_retry_scoring, messages_sweep

    message = queued(NEUTRAL)
    Message.objects.filter(pk=message.pk).update(queued_at=timezone.now() - timedelta(hours=1))
    with mock.patch("scoring.tasks.score_batch.apply_async") as publish:
        assert messages_retry_scoring(message_ids=[message.pk]) == 1
        assert messages_sweep().stuck_requeued == 0  # its clock restarted with the retry
    assert publish.call_count == 1
