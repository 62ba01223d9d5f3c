import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from compliance_site import settings as site_settings


def test_env_int_rejects_a_non_integer(monkeypatch):
    monkeypatch.setenv("SOME_INT", "ten")
    with pytest.raises(ImproperlyConfigured, match="SOME_INT"):
        site_settings.env_int("SOME_INT", 1)


def test_env_bool_rejects_an_ambiguous_value(monkeypatch):
    monkeypatch.setenv("SOME_BOOL", "maybe")
    with pytest.raises(ImproperlyConfigured, match="not a boolean"):
        site_settings.env_bool("SOME_BOOL", True)


def test_env_float_rejects_a_value_out_of_range(monkeypatch):
    monkeypatch.setenv("SOME_RATE", "1.5")
    with pytest.raises(ImproperlyConfigured, match="within"):
        site_settings.env_float("SOME_RATE", 0.1, low=0.0, high=1.0)


def test_env_str_without_default_is_required(monkeypatch):
    monkeypatch.delenv("MISSING_THING", raising=False)
    with pytest.raises(ImproperlyConfigured, match="MISSING_THING is required"):
        site_settings.env_str("MISSING_THING")


def _settings_read_with(**env) -> subprocess.CompletedProcess:
    code = (
        "import compliance_site.settings as s; "
        "print(s.THRESHOLD_SETS, [p.name for p in s.TRAINING_EXTRA_FILES])"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "DEBUG": "1", **env},
        capture_output=True,
        text=True,
        cwd=site_settings.BASE_DIR,
        timeout=60,
    )


@pytest.mark.parametrize("value", ["eval", "dev,ordinary", "holdout_mixed"])
def test_the_threshold_sets_cannot_name_an_evaluation_set_or_the_holdout(value):
    result = _settings_read_with(THRESHOLD_SETS=value)

    assert result.returncode != 0
    assert "must be development sets (THRESHOLD_SETS=none reads the val split)" in result.stderr


def test_the_threshold_sets_and_training_rows_read_names_paths_and_none():
    named = _settings_read_with(THRESHOLD_SETS="dev.jsonl, dev_mixed", TRAINING_EXTRA_FILES="none")
    relative = _settings_read_with(
        THRESHOLD_SETS="none", TRAINING_EXTRA_FILES="scoring/corpus/written/chat.jsonl"
    )

    assert named.stdout.strip() == "('dev', 'dev_mixed') []", named.stderr
    assert relative.stdout.strip() == "() ['chat.jsonl']", relative.stderr


@pytest.mark.django_db
def test_healthz_reports_each_check_to_an_admin_and_503_without_an_active_model(admin_client):
    response = admin_client.get("/healthz")
    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "unhealthy"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["model"] == {"ok": False, "error": "no active model version"}


@pytest.mark.django_db
@pytest.mark.parametrize("role", [None, "no_role", "reviewer", "auditor", "ingest_service"])
def test_healthz_says_only_healthy_or_unhealthy_to_anyone_but_an_admin(client, role):
    from tests.factories import ModelVersionFactory, UserFactory

    if role is not None:
        client.force_login(UserFactory(role=None if role == "no_role" else role))
    unhealthy = client.get("/healthz")
    ModelVersionFactory(is_active=True)
    healthy = client.get("/healthz")

    assert (unhealthy.status_code, unhealthy.json()) == (503, {"status": "unhealthy"})
    assert (healthy.status_code, healthy.json()) == (200, {"status": "healthy"})


@pytest.mark.django_db
def test_healthz_reports_a_stalled_pipeline_when_a_message_waits_too_long_in_received(admin_client, settings):
    from datetime import timedelta

    from django.utils import timezone

    from scoring.models import Message
    from tests.factories import MessageFactory

    settings.PIPELINE_STALL_SECONDS = 60
    fresh = MessageFactory()
    assert admin_client.get("/healthz").json()["checks"]["pipeline"]["ok"] is True

    Message.objects.filter(pk=fresh.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    response = admin_client.get("/healthz")

    pipeline = response.json()["checks"]["pipeline"]
    assert response.status_code == 503
    assert pipeline["ok"] is False and pipeline["oldest_received_s"] >= 300
    assert "celery beat" in pipeline["error"]


@pytest.mark.django_db
@pytest.mark.parametrize(("status", "clock"), [("queued", "queued_at"), ("scored", "scored_at")])
def test_healthz_reports_a_stalled_pipeline_when_nothing_publishes_a_waiting_message_again(
    admin_client, settings, status, clock
):
    """With beat down, a message whose task was lost (a broker restarted without its data, a
    worker killed mid-batch) waits in queued, or flagged in scored, for ever: /healthz said healthy.
    The sweeper restarts the message's clock each time it publishes it again, so one older than
    STUCK_AFTER_SECONDS by more than PIPELINE_STALL_SECONDS means nothing sweeps."""
    from datetime import timedelta

    from django.utils import timezone

    from scoring.models import Message
    from tests.factories import MessageFactory

    settings.STUCK_AFTER_SECONDS, settings.PIPELINE_STALL_SECONDS = 300, 60
    waiting = MessageFactory(status=status)
    Message.objects.filter(pk=waiting.pk).update(**{clock: timezone.now() - timedelta(seconds=350)})
    assert admin_client.get("/healthz").json()["checks"]["pipeline"]["ok"] is True  # a sweep may be due

    Message.objects.filter(pk=waiting.pk).update(**{clock: timezone.now() - timedelta(seconds=400)})
    response = admin_client.get("/healthz")

    pipeline = response.json()["checks"]["pipeline"]
    assert response.status_code == 503
    assert pipeline["ok"] is False
    assert f"in {status} for" in pipeline["error"] and "celery beat" in pipeline["error"]


@pytest.mark.django_db
def test_readyz_says_ready_while_the_pipeline_is_unhealthy_and_unavailable_without_a_database(
    client, admin_client, monkeypatch
):
    import compliance_site.health as health

    assert client.get("/healthz").status_code == 503  # no active model
    ready = client.get("/readyz")
    head = client.head("/readyz")
    detailed = admin_client.get("/readyz")
    monkeypatch.setattr(health, "_database", lambda: {"ok": False, "error": "connection refused"})
    unavailable = client.get("/readyz")
    as_admin = admin_client.get("/readyz")  # the session cannot be read either: no details, no 500

    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
    assert head.status_code == 200
    assert detailed.json()["checks"]["database"]["ok"] is True
    assert (unavailable.status_code, unavailable.json()) == (503, {"status": "unavailable"})
    assert (as_admin.status_code, as_admin.json()) == (503, {"status": "unavailable"})
