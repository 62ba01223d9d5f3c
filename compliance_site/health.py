"""/healthz: database, broker and model status, each checked for real with a short timeout."""

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


def health_report() -> dict[str, Any]:
    checks = {"database": _database(), "broker": _broker(), "model": _model()}
    return {"ok": all(c["ok"] for c in checks.values()), "checks": checks}
