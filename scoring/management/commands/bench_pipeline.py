"""bench_pipeline: end-to-end throughput and latency of ingest -> broker -> worker -> scored.

In one run, on the same messages: (1) the bare Scorer in this process; (2) bulk ingest through
the API (the full Django/DRF stack, in process) with real Celery processes on the configured
broker (a worker on the scoring queue, a worker on `default` and beat, as deployed), timed
until every message is scored; (3) single messages at light load, one at a time,
ingest-to-scored latency: a single message waits for the gather it requests
(GATHER_DELAY_SECONDS), so this latency includes that wait. Explanation tasks published
during the run go to a parked queue that no worker consumes (and are purged), so the figure is
about scoring, which is what the pipeline promises to keep up with; bench_explain measures
explanations. Beat's monitoring refresh is pushed out of the run so it does not take the
scoring worker's CPU.
Bench messages are deleted afterwards unless --keep."""

from __future__ import annotations

import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.models import Max
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient
from tqdm import tqdm

from compliance_site.celery import app as celery_app
from core import queues
from core.processes import BeatProcess, CeleryProcess, WorkerProcess, wait_until
from core.roles import Role
from scoring.classifier.loading import get_scorer
from scoring.classifier.precision import hardware
from scoring.constants import MessageStatus
from scoring.models import Message
from scoring.services.pipeline import active_model_version

PARKED_QUEUE = "bench-parked-explanations"
NOT_YET_SCORED = (MessageStatus.RECEIVED, MessageStatus.QUEUED)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def bench_bodies(n: int) -> list[str]:
    """Mixed real-looking messages from the corpus (all splits, all slices, long ones too)."""
    from scoring.corpus.generator import read_jsonl

    rows = read_jsonl(settings.CORPUS_PATH)
    if not rows:
        raise CommandError(f"The corpus {settings.CORPUS_PATH} is empty.")
    return [rows[i % len(rows)]["body"] for i in range(n)]


class Command(BaseCommand):
    help = "Measure ingest->scored throughput and latency through the API, the broker and a real worker."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--n", type=int, default=5000, help="Messages for the bulk run.")
        parser.add_argument("--single", type=int, default=40, help="Single messages for the latency run.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument("--keep", action="store_true", help="Keep the bench messages.")
        parser.add_argument("--timeout", type=float, default=1800.0)

    def handle(self, *args: Any, **options: Any) -> None:
        n, singles = options["n"], options["single"]
        if n < 1 or singles < 0:
            raise CommandError("--n must be >= 1 and --single >= 0.")
        version = active_model_version()
        run = uuid.uuid4().hex[:8]
        bodies = bench_bodies(n + singles + 1)
        quiet = options["json"]

        scorer = get_scorer(version)
        scorer.score(bodies[:32])  # warm-up: first-call allocations are not throughput
        started = time.perf_counter()
        scorer.score(bodies[:n])
        scorer_rate = n / (time.perf_counter() - started)
        self._say(quiet, f"bare Scorer: {scorer_rate:.1f} msgs/s on {n} messages")

        broker_url = settings.CELERY_BROKER_URL
        user, _ = get_user_model().objects.get_or_create(username="bench-pipeline-service")
        user.groups.add(*Group.objects.filter(name=Role.INGEST_SERVICE))
        client = APIClient()
        client.force_authenticate(user)
        log_dir = Path(settings.VAR_DIR) / "logs"
        env = {"EXPLAIN_QUEUE": PARKED_QUEUE, "MONITORING_REFRESH_SECONDS": "86400"}
        processes: list[CeleryProcess] = [
            WorkerProcess(
                broker_url=broker_url, queues=settings.SCORING_QUEUE, name="bench", log_dir=log_dir, **env
            ),
            WorkerProcess(
                broker_url=broker_url, queues=queues.DEFAULT, name="bench-default", log_dir=log_dir, **env
            ),
            BeatProcess(broker_url=broker_url, name="bench-beat", log_dir=log_dir, **env),
        ]
        result: dict[str, Any] = {}
        try:
            with override_settings(EXPLAIN_QUEUE=PARKED_QUEUE):
                for process in processes:
                    process.start()
                # Warm the worker (it loads the model lazily, on its first task).
                warm = self._post(client, f"bench-{run}-warm", bodies[-1])
                wait_until(lambda: self._scored([warm]) == 1, timeout=300, what="the worker's first message")
                result.update(self._bulk_run(client, run, bodies[:n], options["timeout"], quiet))
                result.update(self._single_run(client, run, bodies[n : n + singles], quiet))
        finally:
            for process in processes:
                process.stop()
            self._cleanup(run, options["keep"])

        result.update(
            {
                "n": n,
                "scorer_msgs_per_s": round(scorer_rate, 2),
                "ratio_e2e_vs_scorer": round(result["e2e_msgs_per_s"] / scorer_rate, 3),
                "broker": broker_url.split("://", 1)[0],
                "database": connection.vendor,
                "model_version": version.name,
                **hardware(scorer.device),
            }
        )
        if quiet:
            self.stdout.write(json.dumps(result))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key:>28}: {value}")

    def _say(self, quiet: bool, text: str) -> None:
        if not quiet:
            self.stdout.write(text)

    @staticmethod
    def _post(client: APIClient, external_id: str, body: str) -> int:
        response = client.post("/api/messages/", {"external_id": external_id, "body": body}, format="json")
        if response.status_code != 202:
            raise CommandError(f"ingest failed: {response.status_code} {response.content[:300]!r}")
        return response.json()["id"]

    @staticmethod
    def _scored(ids: list[int]) -> int:
        """How many of these messages are scored. Cheap when the ids are one contiguous range (a
        bulk run's are): the observer polls while the worker runs and must not take its CPU."""
        first, last = min(ids), max(ids)
        contiguous = last - first + 1 == len(set(ids))
        query = (
            Message.objects.filter(id__range=(first, last))
            if contiguous
            else Message.objects.filter(id__in=ids)
        )
        return query.exclude(status__in=NOT_YET_SCORED).count()

    def _bulk_run(self, client: APIClient, run: str, bodies: list[str], timeout: float, quiet: bool) -> dict:
        ids: list[int] = []
        chunk = settings.BULK_MAX_ITEMS
        started, started_at = time.perf_counter(), timezone.now()
        for offset in range(0, len(bodies), chunk):
            payload = [
                {"external_id": f"bench-{run}-{offset + i}", "body": body}
                for i, body in enumerate(bodies[offset : offset + chunk])
            ]
            response = client.post("/api/messages/bulk/", {"messages": payload}, format="json")
            if response.status_code != 202:
                raise CommandError(f"bulk ingest failed: {response.status_code}")
            ids += [row["id"] for row in response.json()["results"]]
        ingest_s = time.perf_counter() - started
        if len(ids) != len(set(ids)) or max(ids) - min(ids) + 1 != len(ids):
            raise CommandError(
                "the bench messages' ids are not one contiguous range; run it on a quiet database"
            )
        with tqdm(total=len(ids), desc="scored", unit="msg", disable=quiet) as progress:
            done = 0

            def all_scored() -> bool:
                nonlocal done
                now = self._scored(ids)
                progress.update(now - done)
                done = now
                return now == len(ids)

            wait_until(all_scored, timeout=timeout, interval=1.0, what="every bench message scored")
        # The end is the last scored_at in the database, not when the 1-second poll noticed it.
        last_scored = Message.objects.filter(id__in=ids).aggregate(last=Max("scored_at"))["last"]
        elapsed = (last_scored - started_at).total_seconds()
        latencies = [
            (scored - created).total_seconds()
            for created, scored in Message.objects.filter(id__in=ids).values_list("created_at", "scored_at")
            if scored is not None
        ]
        failed = Message.objects.filter(id__in=ids, status=MessageStatus.FAILED).count()
        return {
            "e2e_msgs_per_s": round(len(ids) / elapsed, 2),
            "ingest_api_msgs_per_s": round(len(ids) / ingest_s, 2),
            "p50_latency_s": round(percentile(latencies, 50), 3),
            "p95_latency_s": round(percentile(latencies, 95), 3),
            "failed": failed,
        }

    def _single_run(self, client: APIClient, run: str, bodies: list[str], quiet: bool) -> dict:
        latencies: list[float] = []
        for index, body in enumerate(tqdm(bodies, desc="single messages", disable=quiet)):
            started = time.perf_counter()
            message_id = self._post(client, f"bench-{run}-single-{index}", body)
            wait_until(
                lambda mid=message_id: self._scored([mid]) == 1, timeout=60, interval=0.01, what="a message"
            )
            latencies.append(time.perf_counter() - started)
            time.sleep(0.2)  # light load: one message at a time, with gaps
        if not latencies:
            return {}
        return {
            "single_p50_latency_s": round(statistics.median(latencies), 3),
            "single_p95_latency_s": round(percentile(latencies, 95), 3),
            "single_n": len(latencies),
        }

    def _cleanup(self, run: str, keep: bool) -> None:
        try:
            with celery_app.connection_for_write() as conn:
                conn.default_channel.queue_purge(PARKED_QUEUE)
        except Exception as exc:
            self.stderr.write(f"could not purge {PARKED_QUEUE}: {exc}")
        if not keep:
            Message.objects.filter(external_id__startswith=f"bench-{run}-").delete()
