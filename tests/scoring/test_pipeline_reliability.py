"""Reliability of the pipeline with real parts: a real redis-server, real Celery worker and beat
processes, the test database (PostgreSQL in CI), the API, and a (tiny) real transformer.

Every message is scored exactly once: after a worker is SIGKILLed mid-batch, after the broker
was down while messages arrived, and when single messages wait for a gather."""

from __future__ import annotations

import time

import pytest
import redis
import torch
from django.db import transaction
from django.db.models import Count
from django.test import override_settings
from rest_framework.test import APIClient

from core import queues
from core.publish import publish
from explanations.services.queueing import messages_enqueue_explanation
from scoring.constants import MessageStatus
from scoring.liveness import process_alive
from scoring.models import Message, Prediction, WorkClaim, WorkerDevice
from scoring.services.queueing import messages_sweep
from scoring.tasks import score_batch, shadow_score_batch
from tests.conftest import require_or_skip
from tests.factories import UserFactory
from tests.support.services import CeleryBeat, CeleryWorker, RedisServer, broker, published, wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]

SCORED_OR_LATER = [s for s in MessageStatus.values if s not in (MessageStatus.RECEIVED, MessageStatus.QUEUED)]
# Neutral bodies, so that the tiny random model's routing does not matter for these tests.
BODY = "Hello team, message {i}: the quarterly newsletter is attached, see you at the offsite."


@pytest.fixture
def redis_server():
    require_or_skip(RedisServer.available(), "redis-server", "CLAIMWATCH_REQUIRE_SERVICES")
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def api(seeded_transactional_db, tiny_model_version):
    client = APIClient()
    client.force_authenticate(UserFactory(username="ingest_bot", role="ingest_service"))
    return client


def single(api, external_id: str, i: int = 0) -> int:
    response = api.post(
        "/api/messages/", {"external_id": external_id, "body": BODY.format(i=i)}, format="json"
    )
    assert response.status_code == 202, response.content
    return response.json()["id"]


def bulk(api, start: int, n: int, prefix: str = "r") -> list[int]:
    messages = [{"external_id": f"{prefix}-{i}", "body": BODY.format(i=i)} for i in range(start, start + n)]
    response = api.post("/api/messages/bulk/", {"messages": messages}, format="json")
    assert response.status_code == 202, response.content
    return [row["id"] for row in response.json()["results"]]


def scored_count(ids: list[int]) -> int:
    return Message.objects.filter(id__in=ids, status__in=SCORED_OR_LATER).count()


def assert_exactly_one_prediction_each(ids: list[int]) -> None:
    counts = dict(
        Prediction.objects.filter(message_id__in=ids, is_shadow=False)
        .values_list("message_id")
        .annotate(n=Count("id"))
        .values_list("message_id", "n")
    )
    assert len(counts) == len(ids), f"{len(ids) - len(counts)} messages have no prediction"
    assert set(counts.values()) == {1}


def test_two_hundred_ingested_messages_are_all_scored_exactly_once(api, redis_server):
    worker = CeleryWorker(broker_url=redis_server.url(), name="w200").start()
    try:
        with broker(redis_server.url()):
            ids = bulk(api, 0, 100) + bulk(api, 100, 100)
        wait_until(lambda: scored_count(ids) == 200, timeout=120, what="200 messages scored")
    finally:
        worker.stop()

    assert_exactly_one_prediction_each(ids)
    assert not Message.objects.filter(id__in=ids, status=MessageStatus.FAILED).exists()


@override_settings(STUCK_AFTER_SECONDS=1, SCORING_BATCH_SIZE=25)
def test_a_worker_killed_mid_batch_loses_nothing_and_scores_nothing_twice(api, redis_server):
    # 16 batches of 25: the worker is killed once the first batch is written, while it is
    # busy with the next ones (acks_late: those are unacknowledged when it dies).
    env = {"SCORING_BATCH_SIZE": "25", "CELERY_VISIBILITY_TIMEOUT": "10"}
    first = CeleryWorker(broker_url=redis_server.url(), name="victim", **env).start()
    with broker(redis_server.url()):
        ids = bulk(api, 0, 400, prefix="k")
    wait_until(lambda: scored_count(ids) >= 25, timeout=120, what="the first batch")
    first.kill()
    before_restart = scored_count(ids)
    assert before_restart < 400, "the worker finished before it could be killed; use more messages"

    second = CeleryWorker(broker_url=redis_server.url(), name="survivor", **env).start()
    try:
        with broker(redis_server.url()):
            # Lost deliveries come back by the broker's visibility timeout or the sweeper,
            # whichever is first; both are safe because scoring is idempotent.
            def all_scored() -> bool:
                messages_sweep()
                return scored_count(ids) == 400

            wait_until(all_scored, timeout=180, interval=1.0, what="all 400 messages after the restart")
    finally:
        second.stop()

    assert_exactly_one_prediction_each(ids)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a host without a usable GPU")
def test_a_worker_that_cannot_use_its_gpu_takes_nothing_and_a_worker_that_can_scores_it_all(
    api, redis_server, admin_client
):
    client = admin_client  # /healthz details are for compliance admins
    blind = CeleryWorker(broker_url=redis_server.url(), name="no-gpu", SCORING_DEVICE="cuda").start()
    try:
        with broker(redis_server.url()):
            ids = bulk(api, 0, 40, prefix="nogpu")
        wait_until(lambda: WorkerDevice.objects.filter(node__startswith="no-gpu").exists(), timeout=30)
        time.sleep(3)  # time enough to take work, were it consuming the gpu queue
        report = WorkerDevice.objects.get(node__startswith="no-gpu")
        assert not report.usable and not report.consuming and "no CUDA GPU" in report.reason
        assert Message.objects.filter(id__in=ids, status=MessageStatus.QUEUED, attempts=0).count() == 40
        assert redis.Redis.from_url(redis_server.url()).llen("gpu") >= 1, (
            "the scoring tasks wait on the broker"
        )
        assert "cuda.is_available()=False" in blind.log() and "will NOT consume" in blind.log()
        health = client.get("/healthz").json()["checks"]["workers"]
        assert health["ok"] is False and report.node in health["error"]
    finally:
        blind.stop()

    able = CeleryWorker(broker_url=redis_server.url(), name="with-device").start()
    try:
        wait_until(lambda: scored_count(ids) == 40, timeout=120, what="the waiting messages scored")
    finally:
        able.stop()
    assert_exactly_one_prediction_each(ids)
    assert set(Message.objects.filter(id__in=ids).values_list("attempts", flat=True)) == {0}  # no crash


def test_ingestion_while_redis_is_down_is_accepted_and_scored_once_redis_is_back(api, redis_server):
    redis_server.stop()
    # One broker configuration across the outage, as in a web process that stays up.
    with broker(redis_server.url()):
        started = time.monotonic()
        single = api.post(
            "/api/messages/", {"external_id": "down-1", "body": BODY.format(i=1)}, format="json"
        )
        ids = [single.json()["id"], *bulk(api, 2, 50, prefix="down")]
        elapsed = time.monotonic() - started

        assert single.status_code == 202
        assert elapsed < 30, "a down broker must not hang ingestion"
        assert Message.objects.filter(id__in=ids, status=MessageStatus.RECEIVED).count() == 51
        assert messages_sweep().received_enqueued == 0, "still down: the sweeper keeps them received"

        redis_server.start()
        # then: beat's sweeper (every SWEEP_INTERVAL_SECONDS) gathers them; no request is pending
        worker = CeleryWorker(broker_url=redis_server.url(), name="after-outage").start()
        beat = CeleryBeat(broker_url=redis_server.url(), name="after-outage-beat", SWEEP_INTERVAL_SECONDS="1")
        beat.start()
        try:
            wait_until(lambda: scored_count(ids) == 51, timeout=120, what="messages queued by the sweeper")
        finally:
            beat.stop()
            worker.stop()

    assert_exactly_one_prediction_each(ids)


@override_settings(GATHER_DELAY_SECONDS=2.0)
def test_a_stream_of_single_messages_is_gathered_into_a_few_batches(api, redis_server):
    worker = CeleryWorker(broker_url=redis_server.url(), name="gather").start()
    try:
        with broker(redis_server.url()):
            # when: thirty single POSTs, one after another (well within the 2 s gather delay)
            ids = [single(api, f"g-{i}", i) for i in range(30)]
            wait_until(lambda: scored_count(ids) == 30, timeout=120, what="the gathered messages")
    finally:
        worker.stop()

    assert_exactly_one_prediction_each(ids)
    # one publish stamps one queued_at per batch
    batches = len(set(Message.objects.filter(id__in=ids).values_list("queued_at", flat=True)))
    assert batches <= 5, f"{batches} scoring tasks for 30 single messages"


def test_on_redis_a_scoring_batch_is_taken_before_explanations_and_shadow_batches_published_earlier(
    redis_server, settings
):
    # given a backlog on the gpu queue: a shadow batch, then two explanation batches (published
    # as the pipeline publishes them)
    with broker(redis_server.url()):
        published(queues.GPU)
        publish(shadow_score_batch, args=[[1], 7], queue=settings.SCORING_QUEUE, what="shadow")
        messages_enqueue_explanation(message_ids=list(range(1, 2 * settings.EXPLAIN_BATCH_SIZE + 1)))

        # when a scoring batch is published after them (new mail, or a batch recovered after a crash)
        publish(score_batch, args=[[99]], queue=settings.SCORING_QUEUE, what="scoring")

        # then a worker takes it first, then the explanations in their order, then the shadow batch
        # (basic_get reads the priority lists in the order a worker's BRPOP names them)
        taken = [name for name, _ in published(queues.GPU)]
    assert taken == [
        "scoring.tasks.score_batch",
        "explanations.tasks.explain_batch",
        "explanations.tasks.explain_batch",
        "scoring.tasks.shadow_score_batch",
    ]


def test_the_embedded_filesystem_broker_runs_a_real_worker_without_any_server(api, tmp_path):
    folders = {
        "data_folder_in": str(tmp_path / "queue"),
        "data_folder_out": str(tmp_path / "queue"),
        "processed_folder": str(tmp_path / "processed"),
        "control_folder": str(tmp_path / "control"),
        "polling_interval": 0.1,
    }
    worker = CeleryWorker(
        broker_url="filesystem://",
        name="fs",
        CLAIMWATCH_BROKER_DIR=str(tmp_path),
    ).start()
    beat = CeleryBeat(broker_url="filesystem://", name="fs-beat", CLAIMWATCH_BROKER_DIR=str(tmp_path)).start()
    try:
        with broker("filesystem://", folders):
            ids = [*bulk(api, 0, 30, prefix="fs"), single(api, "fs-single", 1)]
        wait_until(lambda: scored_count(ids) == 31, timeout=120, what="scoring over the filesystem broker")
    finally:
        beat.stop()
        worker.stop()

    assert_exactly_one_prediction_each(ids)


def fs_folders(root) -> dict:
    return {
        "data_folder_in": str(root / "queue"),
        "data_folder_out": str(root / "queue"),
        "processed_folder": str(root / "processed"),
        "control_folder": str(root / "control"),
        "polling_interval": 0.1,
    }


def kill_mid_batch(worker: CeleryWorker) -> WorkClaim:
    """SIGKILL `worker` (parent and pool child) while it holds a batch it has not written: the
    batch's claim row is locked first, so the worker cannot write and end it in between."""
    for _ in range(5):
        claimed = WorkClaim.objects.filter(stage="score")
        wait_until(claimed.exists, timeout=120, what="a batch claimed")
        with transaction.atomic():
            claim = WorkClaim.objects.select_for_update().filter(stage="score").first()
            if claim is not None:  # else it was written just before: wait for the next one
                worker.kill()
                return claim
    raise AssertionError("no batch could be caught mid-way")


@override_settings(SCORING_BATCH_SIZE=20, STUCK_AFTER_SECONDS=300)
def test_a_batch_whose_worker_was_sigkilled_on_the_filesystem_broker_is_recovered_by_the_next_sweep(
    api, tmp_path
):
    # given make run's broker, which loses the task a SIGKILLed worker holds (kombu's filesystem
    # transport deletes a message's file when a worker takes it), and three batches of 20
    folders = fs_folders(tmp_path)
    env = {"CLAIMWATCH_BROKER_DIR": str(tmp_path)}
    victim = CeleryWorker(broker_url="filesystem://", name="fs-victim", **env).start()
    try:
        with broker("filesystem://", folders):
            ids = bulk(api, 0, 60, prefix="sigkill")
        # when its worker is killed mid-batch
        claim = kill_mid_batch(victim)
    finally:
        victim.stop()
    wait_until(lambda: not process_alive(claim.pid), timeout=30, what="the killed pool child to be gone")
    survivor = CeleryWorker(broker_url="filesystem://", name="fs-survivor", **env).start()
    try:
        with broker("filesystem://", folders):
            # then the first sweep after the kill finds the batch (its process is gone) and
            # publishes it again, in halves: not STUCK_AFTER_SECONDS (300 s) later
            first = messages_sweep()
            assert first.claims_recovered == 1 and first.stuck_requeued == 0
            wait_until(lambda: scored_count(ids) == 60, timeout=120, what="all 60 messages after the kill")
            # and every claim ends with its batch: the survivor may still be explaining what it
            # routed, and stopping it mid-batch would leave that claim for the next sweep
            wait_until(lambda: not WorkClaim.objects.exists(), timeout=120, what="claims to end")
    finally:
        survivor.stop()

    assert_exactly_one_prediction_each(ids)
    assert set(Message.objects.filter(id__in=ids).values_list("attempts", flat=True)) == {0}
