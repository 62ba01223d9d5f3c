"""/healthz: database, broker, model, pipeline, worker-device status and failed messages, each
checked for real with a short timeout. `status` is "unhealthy" (HTTP 503) when a check fails,
"degraded" (HTTP 200: the service works, but something needs a person) when a check is ok but
degraded (failed messages waiting for a retry), "healthy" otherwise. /readyz: the web process
and its database alone (`readiness_report`)."""

from __future__ import annotations

from typing import Any

from django.db import connection


def _database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return {"ok": True, "vendor": connection.vendor}
    except Exception as exc:
        return {"ok": False, "error": str(exc)}


def _broker() -> dict[str, Any]:
    from compliance_site.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
            transport = conn.transport_cls
        return {"ok": True, "transport": str(transport)}
    except Exception as exc:
        return {"ok": False, "error": str(exc)}


def _model() -> dict[str, Any]:
    from scoring.models import ModelVersion

    try:
        active = ModelVersion.objects.filter(is_active=True).first()
    except Exception as exc:
        return {"ok": False, "error": str(exc)}
    if active is None:
        return {"ok": False, "error": "no active model version"}
    return {"ok": True, "version": active.name, "threshold": active.threshold}


def _pipeline() -> dict[str, Any]:
    """Whether messages move: single messages wait in `received` for a gather, so an old one means
    the `default` worker or beat is not running (or the broker is down). A message waiting in
    `queued` (for scoring) or flagged in `scored` (for its explanation) has its clock restarted by
    the sweeper (beat) each time it publishes it again, STUCK_AFTER_SECONDS after the last time:
    one older than that by more than PIPELINE_STALL_SECONDS means nothing sweeps, and a task lost
    with it (a broker restarted without its data, a worker killed while beat was down) waits for
    ever. A backlog is no stall: its messages are published again and their clocks restart."""
    from django.conf import settings
    from django.db.models import Min, Q
    from django.utils import timezone

    from scoring.constants import MessageStatus
    from scoring.models import Message

    try:
        oldest = Message.objects.aggregate(
            received=Min("created_at", filter=Q(status=MessageStatus.RECEIVED)),
            queued=Min("queued_at", filter=Q(status=MessageStatus.QUEUED)),
            scored=Min("scored_at", filter=Q(status=MessageStatus.SCORED)),
        )
    except Exception as exc:
        return {"ok": False, "error": str(exc)}
    now = timezone.now()
    waited = {stage: round((now - at).total_seconds(), 1) if at else 0.0 for stage, at in oldest.items()}
    swept_within = settings.STUCK_AFTER_SECONDS + settings.PIPELINE_STALL_SECONDS
    errors = []
    if waited["received"] > settings.PIPELINE_STALL_SECONDS:
        errors.append(
            f"a message has waited {waited['received']:.0f} s in received: is celery beat running, with a "
            "worker on the default queue, and is the broker up?"
        )
    for stage, work in (("queued", "scoring"), ("scored", "its explanation")):
        if waited[stage] > swept_within:
            errors.append(
                f"a message has waited {waited[stage]:.0f} s in {stage} for {work} without being "
                f"published again (the sweeper does it after {settings.STUCK_AFTER_SECONDS} s): is celery "
                "beat running, with a worker on the default queue?"
            )
    report: dict[str, Any] = {
        "ok": not errors,
        "oldest_received_s": waited["received"],
        "oldest_queued_s": waited["queued"],
        "oldest_awaiting_explanation_s": waited["scored"],
    }
    if errors:
        report["error"] = "; ".join(errors)
    return report


def _workers() -> dict[str, Any]:
    """What each model worker found about its device at start (scoring.worker): a worker that
    cannot use its device consumes nothing, so the model queues wait for one that can."""
    from scoring.selectors import worker_devices

    try:
        workers = worker_devices()
    except Exception as exc:
        return {"ok": False, "error": str(exc)}
    unusable = [w for w in workers if not w["usable"] and not w["stale"]]
    report: dict[str, Any] = {"ok": not unusable, "workers": workers}
    if unusable:
        report["error"] = "; ".join(
            f"worker {w['node']} cannot use its device {w['requested']!r} ({w['reason']}): it consumes "
            f"none of {', '.join(w['queues'])}, and their messages wait for a worker that can"
            for w in unusable
        )
    return report


def _failed_messages() -> dict[str, Any]:
    """Messages that failed for good (scoring refused them, or they crashed their worker alone
    MAX_ATTEMPTS times): the pipeline runs, so not unhealthy, but degraded until a compliance
    admin retries them (monitoring's failed-messages page)."""
    from django.db.models import Count, Max

    from scoring.constants import MessageStatus
    from scoring.models import Message

    try:
        failed = Message.objects.filter(status=MessageStatus.FAILED)
        found = failed.aggregate(n=Count("id"), latest=Max("failed_at"))
    except Exception as exc:
        return {"ok": False, "error": str(exc)}
    report: dict[str, Any] = {"ok": True, "degraded": bool(found["n"]), "failed": found["n"]}
    if found["n"]:
        report["latest_failed_at"] = found["latest"].isoformat() if found["latest"] else None
        report["warning"] = (
            f"{found['n']} messages failed for good and are not reviewed: retry them on /monitoring/failed/ "
            "once the cause is fixed"
        )
    return report


def readiness_report() -> dict[str, Any]:
    """/readyz: whether this web process serves and reaches its database, and nothing else. A
    load balancer or an orchestrator's readiness probe asks it to decide whether to send traffic
    to the web (not whether to restart it: restarting cures no database outage). Ingest keeps
    storing messages while the broker is down or beat has stopped, which /healthz reports as
    unhealthy for a person to look at."""
    database = _database()
    return {"ok": database["ok"], "checks": {"database": database}}


def health_report() -> dict[str, Any]:
    checks = {
        "database": _database(),
        "broker": _broker(),
        "model": _model(),
        "pipeline": _pipeline(),
        "workers": _workers(),
        "failed_messages": _failed_messages(),
    }
    ok = all(c["ok"] for c in checks.values())
    degraded = any(c.get("degraded") for c in checks.values())
    status = "unhealthy" if not ok else "degraded" if degraded else "healthy"
    return {"ok": ok, "status": status, "checks": checks}
