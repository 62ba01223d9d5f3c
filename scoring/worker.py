"""What a Celery worker does about the device it computes on (the model queues: scoring,
explanations, checks).

A worker configured for a device it cannot use (`SCORING_DEVICE=cuda` with no usable GPU: a
missing driver, one older than the CUDA runtime of the torch wheel) must not take work it can only
fail: every message it took would be retried and charged until it was failed for good. So:

- before it consumes (celeryd_after_setup, in the parent process, before the pool forks), the
  worker probes its device in a fresh interpreter (scoring.classifier.device_check; the parent must
  never initialise CUDA, which cannot cross a fork). Where the device is not usable it deselects
  its model queues, so it never consumes them, and says why in its log; the messages stay on the
  broker for a worker that can;
- each pool child logs torch's version, its CUDA runtime and `cuda.is_available()` at
  worker_process_init (and sets the tokenizers' parallelism of the settings);
- every model task calls `require_usable_device` first: in a child whose device fails after all,
  the task goes back to the queue (Reject, requeue) uncharged, and the worker cancels its model
  queues;
- what each worker found is stored (scoring.models.WorkerDevice): /healthz fails on a worker that
  cannot use its device, the monitoring queue panel lists every worker's device, and
  `manage.py worker_health` is the worker container's health check.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import replace
from typing import NoReturn

from django.conf import settings
from django.db import connections
from django.utils import timezone

from scoring.classifier.device_check import DeviceReport, cpu_report, probe, probe_in_subprocess

logger = logging.getLogger(__name__)

_child_reports: dict[str, DeviceReport] = {}


def model_queues() -> set[str]:
    """The queues whose tasks run the model (they need the device)."""
    return {settings.SCORING_QUEUE, settings.EXPLAIN_QUEUE, settings.CHECKS_QUEUE}


def device_report(requested: str, *, isolated: bool) -> DeviceReport:
    """The device `requested` as this worker would use it; `isolated`: probe in a fresh
    interpreter (the Celery parent). "cpu" needs no probe (and asks torch nothing about CUDA)."""
    if requested.strip().lower() == "cpu":
        return cpu_report()
    return probe_in_subprocess(requested) if isolated else probe(requested)


def worker_device_record(*, node: str, queues: Iterable[str], report: DeviceReport, consuming: bool):
    """Store what worker `node` found (one row per node, replaced)."""
    from scoring.models import WorkerDevice

    row, _ = WorkerDevice.objects.update_or_create(
        node=node,
        defaults={
            "queues": sorted(queues),
            "requested": report.requested,
            "device": report.device or "",
            "usable": report.usable,
            "consuming": consuming,
            "reason": report.reason,
            "torch_version": report.torch_version,
            "cuda_version": report.cuda_version or "",
            "cuda_available": report.cuda_available,
            "gpu_name": report.gpu_name or "",
            "reported_at": timezone.now(),
        },
    )
    return row


def check_before_consuming(*, node: str, queues) -> DeviceReport | None:
    """Probe the device of a worker that consumes model queues; deselect them when it is not
    usable. `queues`: the worker's kombu queue registry (app.amqp.queues). Returns the report
    (None: this worker runs no model)."""
    consumed = set(queues.consume_from or queues)
    mine = sorted(consumed & model_queues())
    if not mine:
        return None
    report = device_report(settings.SCORING_DEVICE, isolated=True)
    if report.usable:
        logger.info("worker %s: %s", node, report.summary())
    else:
        for name in mine:
            queues.deselect(name)
        logger.error(
            "worker %s: %s. It will NOT consume %s: their messages stay queued for a worker that "
            "can use its device.",
            node,
            report.summary(),
            ", ".join(mine),
        )
    try:
        worker_device_record(node=node, queues=consumed, report=report, consuming=report.usable)
    except Exception as exc:  # the database may be down at start; the log still says it
        logger.warning("worker %s: could not store its device report: %s", node, exc)
    finally:
        if not any(c.in_atomic_block for c in connections.all(initialized_only=True)):
            connections.close_all()  # nothing of the parent's connection crosses the fork
    return report


def on_child_start() -> None:
    """In each pool child after the fork: threads, tokenizers, and what torch sees."""
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if settings.WORKER_TOKENIZERS_PARALLELISM else "false"
    import torch

    if settings.CELERY_WORKER_TORCH_THREADS:
        torch.set_num_threads(settings.CELERY_WORKER_TORCH_THREADS)
    try:
        available = torch.cuda.is_available()
    except Exception as exc:  # a broken driver can raise from the query
        available = f"error: {exc}"
    logger.info(
        "worker child %d: torch %s, CUDA runtime %s, cuda.is_available()=%s, SCORING_DEVICE=%s",
        os.getpid(),
        torch.__version__,
        torch.version.cuda or "none (CPU build)",
        available,
        settings.SCORING_DEVICE,
    )


def require_usable_device(task) -> None:
    """First thing of every model task: in a child that cannot use its device, send the task back
    to the queue uncharged and stop this worker consuming model queues (module docstring)."""
    requested = settings.SCORING_DEVICE
    if requested not in _child_reports:
        _child_reports[requested] = device_report(requested, isolated=False)
    report = _child_reports[requested]
    if not report.usable:
        _stop_taking_model_work(task, report)


def device_failed(task, exc: BaseException) -> NoReturn:
    """The device failed under a task (DeviceFailed): from now on this child's device counts as
    not usable, and the task goes back to the queue (no message was charged or judged)."""
    requested = settings.SCORING_DEVICE
    known = _child_reports.get(requested) or device_report(requested, isolated=False)
    _child_reports[requested] = replace(known, usable=False, reason=f"the device failed: {exc}")
    _stop_taking_model_work(task, _child_reports[requested])


def _stop_taking_model_work(task, report: DeviceReport) -> NoReturn:
    from celery.exceptions import Reject

    node = getattr(task.request, "hostname", None) or "unknown"
    logger.error("worker %s: %s; task %s goes back to the queue", node, report.summary(), task.name)
    try:  # first: a worker that keeps consuming would only bounce tasks back
        for name in sorted(model_queues()):
            task.app.control.cancel_consumer(name, destination=[node])
    except Exception as exc:  # the broker is down: the message is requeued anyway
        logger.warning("worker %s: could not cancel its model queues: %s", node, exc)
    try:
        worker_device_record(node=node, queues=model_queues(), report=report, consuming=False)
    except Exception as exc:
        logger.warning("worker %s: could not store its device report: %s", node, exc)
    raise Reject(f"this worker cannot use its device: {report.reason}", requeue=True)
