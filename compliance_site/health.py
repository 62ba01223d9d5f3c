"""/healthz: database, broker, model and pipeline status, each checked for real with a short timeout."""

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
    """Whether messages leave `received`: single messages wait there for a gather, so
    an old one means the `default` worker or beat is not running (or the broker is down)."""
    from django.conf import settings
    from django.db.models import Min
    from django.utils import timezone

    from scoring.constants import MessageStatus
    from scoring.models import Message

    try:
        oldest = Message.objects.filter(status=MessageStatus.RECEIVED).aggregate(oldest=Min("created_at"))[
            "oldest"
        ]
    except Exception as exc:
        return {"ok": False, "error": str(exc)}
    waiting_s = round((timezone.now() - oldest).total_seconds(), 1) if oldest else 0.0
    report: dict[str, Any] = {
        "ok": waiting_s <= settings.PIPELINE_STALL_SECONDS,
        "oldest_received_s": waiting_s,
    }
    if not report["ok"]:
        report["error"] = (
            f"a message has waited {waiting_s:.0f} s in received: is celery beat running, with a worker "
            "on the default queue, and is the broker up?"
        )
    return report


def health_report() -> dict[str, Any]:
    checks = {"database": _database(), "broker": _broker(), "model": _model(), "pipeline": _pipeline()}
    return {"ok": all(c["ok"] for c in checks.values()), "checks": checks}
