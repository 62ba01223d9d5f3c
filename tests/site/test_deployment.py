"""docker-compose.yml and the Dockerfile cannot be run here (no Docker engine), so check that
every service runs a command this project really has and every file they name exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.management import get_commands

from compliance_site.celery import app as celery_app

ROOT = Path(settings.BASE_DIR)
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
APP_SERVICES = {
    name: svc
    for name, svc in SERVICES.items()
    if svc.get("build") or svc.get("image", "").startswith("claimwatch")
}


def _option(command: list[str], *names: str) -> str | None:
    for name in names:
        if name in command:
            return command[command.index(name) + 1]
    return None


def test_compose_has_every_service_the_pipeline_needs():
    assert {"postgres", "redis", "web", "gpu-worker", "cpu-worker", "beat", "migrate"} <= set(SERVICES)


@pytest.mark.parametrize("name", sorted(APP_SERVICES))
def test_every_app_service_runs_a_command_the_project_has(name):
    command = APP_SERVICES[name]["command"]
    assert isinstance(command, list), "exec form, so signals reach the process"
    program = command[0]
    if program == "python":
        assert command[1] == "manage.py" and (ROOT / "manage.py").exists()
        assert command[2] in get_commands(), f"{command[2]} is not a management command"
    elif program == "gunicorn":
        module_name, attribute = command[1].split(":")
        assert callable(getattr(importlib.import_module(module_name), attribute))
    elif program == "celery":
        assert _option(command, "-A", "--app") == "compliance_site"
        sub = command[3]
        assert sub in {"worker", "beat"}
        if sub == "worker":
            known = {queue.name for queue in celery_app.conf.task_queues}
            queues = set(_option(command, "-Q", "--queues").split(","))
            assert queues <= known, f"unknown queues {queues - known}"
    else:
        pytest.fail(f"{name} runs {program!r}, which this test does not know how to check")


def test_the_workers_together_consume_every_queue_tasks_are_routed_to():
    consumed = set()
    for svc in APP_SERVICES.values():
        command = svc["command"]
        if command[0] == "celery" and command[3] == "worker":
            consumed |= set(_option(command, "-Q", "--queues").split(","))
    routed = {route["queue"] for route in celery_app.conf.task_routes.values()}
    assert routed | {celery_app.conf.task_default_queue} <= consumed


def test_the_gpu_worker_reserves_an_nvidia_device_and_consumes_the_model_queues():
    worker = SERVICES["gpu-worker"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    assert set(_option(worker["command"], "-Q").split(",")) == {"gpu", "checks"}


def _procfile() -> dict[str, list[str]]:
    lines = (ROOT / "Procfile.dev").read_text().splitlines()
    return {
        name: command.split() for name, command in (line.split(": ", 1) for line in lines if line.strip())
    }


def test_make_run_starts_programs_the_venv_has_and_workers_for_every_routed_queue():
    workers: dict[str, set[str]] = {}
    for name, command in _procfile().items():
        assert command[0].startswith(".venv/bin/") and command[0].split("/")[-1] in {"python", "celery"}
        if command[0].endswith("python"):
            assert command[1] == "manage.py" and command[2] in get_commands()
        elif command[3] == "worker":
            workers[name] = set(_option(command, "-Q").split(","))
    routed = {route["queue"] for route in celery_app.conf.task_routes.values()}
    assert routed | {celery_app.conf.task_default_queue} <= set().union(*workers.values())
    # On a CPU a check takes minutes: a worker of its own, so that scoring never waits behind one.
    for queues in workers.values():
        assert not (
            settings.CHECKS_QUEUE in queues and {settings.SCORING_QUEUE, settings.EXPLAIN_QUEUE} & queues
        )


def test_compose_environment_names_settings_that_exist():
    settings_source = (ROOT / "compliance_site" / "settings.py").read_text()
    example = (ROOT / ".env.example").read_text()
    names = {line.split("=", 1)[0] for line in example.splitlines() if line and not line.startswith("#")}
    for svc in APP_SERVICES.values():
        names |= set(svc.get("environment", {}))
    names.discard("POSTGRES_PASSWORD")  # read by compose itself for the postgres service
    for name in names:
        assert re.search(rf'"{name}"', settings_source), f"{name} is not read by settings.py"


def test_the_dockerfile_copies_files_that_exist_and_runs_a_real_command():
    dockerfile = (ROOT / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (\S+) ", dockerfile, flags=re.MULTILINE):
        if source != ".":
            assert (ROOT / source).exists(), source
    assert "compliance_site.wsgi:application" in dockerfile
    assert "torch==" in (ROOT / "requirements.txt").read_text()
