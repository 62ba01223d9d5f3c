"""gpu_check: the prepared device check (scoring.gpu_check). On a GPU it runs the issue's sizes
in a few minutes; on a CPU the same steps at toy sizes (CI runs it so)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import torch
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from scoring import gpu_check
from scoring.classifier.device_check import resolve_device
from scoring.classifier.training import TrainConfig
from scoring.corpus.jsonl import read_jsonl


class Command(BaseCommand):
    help = (
        "Device, a short training, CPU-float32 vs device scoring agreement, Scorer throughput at the "
        "default and GPU profile, explanations, and a real prefork worker: one JSON object with --json."
    )

    def add_arguments(self, parser):
        parser.add_argument("--device", default="auto", help="auto (cuda when available) | cpu | cuda[:N]")
        parser.add_argument("--toy", action="store_true", help="the CPU sizes even on a GPU (a smoke run)")
        parser.add_argument("--skip-worker", action="store_true", help="leave out the real-worker step")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print one JSON object")
        # internal: the worker step, run by the command itself in a child process
        parser.add_argument("--worker-step", default=None, help="(internal) artifact of the worker step")
        parser.add_argument("--worker-messages", type=int, default=0, help="(internal)")
        parser.add_argument("--worker-timeout", type=float, default=300.0, help="(internal)")

    def handle(
        self, *args, device, toy, skip_worker, as_json, worker_step, worker_messages, worker_timeout, **_
    ):
        if worker_step:
            report = _worker_step(Path(worker_step), worker_messages, worker_timeout)
            self.stdout.write(json.dumps(report, sort_keys=True))
            return
        try:
            target = resolve_device(device)
        except Exception as exc:
            raise CommandError(str(exc)) from exc
        sizes = gpu_check.CPU_SIZES if toy or target.type == "cpu" else gpu_check.GPU_SIZES
        started = time.perf_counter()
        report: dict = {"sizes": asdict(sizes)}
        gpu_check.run_step("device", report, lambda: gpu_check.device_facts(target))
        bodies = [
            row["body"] for row in read_jsonl(settings.CORPUS_PATH, validate=False) if row["split"] == "test"
        ]
        workdir = gpu_check.temporary_workdir()
        progress = not as_json
        config = TrainConfig(
            base_model=settings.BASE_MODEL_PATH,
            corpus_path=str(
                gpu_check.subset_corpus(
                    Path(settings.CORPUS_PATH), workdir / "subset.jsonl", sizes.train_rows
                )
            ),
            epochs=1,
            calibrate=False,
            token_budget=gpu_check.GPU_PROFILE["TOKEN_BUDGET"] if target.type == "cuda" else 8192,
        )
        state: dict = {}

        def training():
            state["result"], figures = gpu_check.short_training(config, device=target, progress=progress)
            return figures

        gpu_check.run_step("training", report, training)
        result = state.get("result")
        if result is not None:
            cpu, on_device = gpu_check.scorer_pair(result, device=target, token_budget=settings.TOKEN_BUDGET)
            gpu_check.run_step(
                "agreement",
                report,
                lambda: gpu_check.agreement(cpu, on_device, bodies[: sizes.agreement_messages]),
            )
            gpu_check.run_step(
                "throughput",
                report,
                lambda: gpu_check.throughput(on_device, bodies, sizes.throughput_messages),
            )
            explain_args = (cpu, on_device, bodies, sizes.explain_messages, sizes.ig_steps)
            gpu_check.run_step("explanations", report, lambda: gpu_check.explanations(*explain_args))
            if not skip_worker:
                gpu_check.run_step("worker", report, lambda: _worker(result, target, sizes, workdir))
        report["seconds"] = round(time.perf_counter() - started, 1)
        report["ok"] = all(
            step.get("ok") for step in report.values() if isinstance(step, dict) and "ok" in step
        )
        if as_json:
            self.stdout.write(json.dumps(report, sort_keys=True, default=str))
        else:
            for key, value in report.items():
                self.stdout.write(
                    f"{key}: {json.dumps(value, default=str) if isinstance(value, dict) else value}"
                )
        if not report["ok"]:
            raise CommandError("a step of the device check failed (see its error above)")


def _worker(result, target: torch.device, sizes, workdir: Path) -> dict:
    from scoring.classifier.artifacts import save_artifact

    artifact = workdir / "models" / "gpu-check"
    manifest = {**result.manifest, "version": "gpu-check"}
    save_artifact(artifact, model=result.model, tokenizer=result.tokenizer, manifest=manifest,
                  metrics=result.metrics, eval_rows=[])  # fmt: skip
    return gpu_check.worker_run(
        artifact, device=target, sizes=sizes, profile=target.type == "cuda", workdir=workdir, timeout=300.0
    )


def _worker_step(artifact: Path, n: int, timeout: float) -> dict:
    """In the child process, on its own database and broker (scoring.gpu_check.worker_run)."""
    from django.core.management import call_command
    from django.db.models import Count

    from core.processes import WorkerProcess, wait_until
    from explanations.models import Explanation
    from governance.services.model_versions import model_version_activate
    from scoring.constants import MessageStatus
    from scoring.models import Message
    from scoring.services.ingest import IncomingMessage, messages_ingest_bulk
    from scoring.services.model_versions import model_version_register
    from scoring.worker import model_queues

    call_command("migrate", verbosity=0, interactive=False)
    version = model_version_register(artifact_dir=artifact)
    model_version_activate(version=version, reason="gpu_check worker step")
    worker = WorkerProcess(
        broker_url=settings.CELERY_BROKER_URL,
        queues=",".join(sorted({*model_queues(), settings.CELERY_TASK_DEFAULT_QUEUE})),
        name="gpu-check",
        log_dir=settings.VAR_DIR / "logs",
    ).start(timeout=300)  # fmt: skip
    waiting = (MessageStatus.RECEIVED, MessageStatus.QUEUED, MessageStatus.SCORED)
    try:
        bodies = [
            row["body"] for row in read_jsonl(settings.CORPUS_PATH, validate=False) if row["split"] == "test"
        ]
        stamp = time.time_ns()
        started = time.perf_counter()
        messages_ingest_bulk(
            items=[IncomingMessage(f"gpu-check-{stamp}-{i}", bodies[i % len(bodies)]) for i in range(n)]
        )
        wait_until(
            lambda: not Message.objects.filter(status__in=waiting).exists(), timeout=timeout, interval=0.5,
            what=f"{n} messages scored and explained",
        )  # fmt: skip
        seconds = time.perf_counter() - started
    finally:
        worker.stop()
    log = worker.log()
    statuses = dict(Message.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    counted = (
        Explanation.objects.values_list("precision").annotate(n=Count("id")).values_list("precision", "n")
    )
    precisions = {precision or "not IG": count for precision, count in counted}
    return {
        "messages": n,
        "seconds": round(seconds, 1),
        "msgs_per_s": round(n / seconds, 2),
        "statuses": statuses,
        "explanations_by_precision": precisions,
        "failed": statuses.get(MessageStatus.FAILED, 0),
        "log_alarms": {alarm: log.count(alarm) for alarm in gpu_check.LOG_ALARMS if alarm in log},
        "device_report": "NOT usable" not in log,
    }
