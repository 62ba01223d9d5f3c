"""docker-compose.yml and the Dockerfile cannot be run here (no Docker engine), so check that
every service runs a command this project really has and every file they name exists."""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
import yaml
from django.conf import settings
from django.core.management import get_commands

from compliance_site.celery import app as celery_app

ROOT = Path(settings.BASE_DIR)
COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text()
COMPOSE = yaml.safe_load(COMPOSE_TEXT)
SERVICES = COMPOSE["services"]

APP_SERVICES = {
    name: svc
    for name, svc in SERVICES.items()
    if svc.get("build") or svc.get("image", "").startswith("claimwatch")
}

# What a GPU needs not to idle (issue 20); the settings' defaults are the CPU profile.
GPU_PROFILE = {
    "TOKEN_BUDGET": "131072",
    "SCORING_BATCH_SIZE": "2048",
    "EXPLAIN_BATCH_SIZE": "128",
    "IG_TOKENS_PER_FORWARD": "65536",
    "IG_TOKENS_PER_CALL": "65536",
    "WORKER_TOKENIZERS_PARALLELISM": "1",
}


def _with_commented_services_uncommented(text: str) -> str:
    """The compose file with its commented-out service templates (`  # gpu-worker-1:` and the
    `  #   ...` lines under it) uncommented, so the template a reader copies is checked too."""
    lines, inside = [], False
    for line in text.splitlines():
        if re.fullmatch(r"  # [a-z0-9-]+:", line):
            inside = True
            lines.append("  " + line[4:])
        elif inside and line.startswith("  #   "):
            lines.append("  " + line[4:])
        else:
            inside = False
            lines.append(line)
    return "\n".join(lines) + "\n"


# The services as written plus the commented templates (a second GPU's worker).
EVERY_SERVICE = yaml.safe_load(_with_commented_services_uncommented(COMPOSE_TEXT))["services"]


def _option(command: list[str], *names: str) -> str | None:
    for name in names:
        if name in command:
            return command[command.index(name) + 1]
    return None


def _worker_queues(svc: dict) -> set[str]:
    command = svc.get("command") or []
    if len(command) > 3 and command[0] == "celery" and command[3] == "worker":
        return set(_option(command, "-Q", "--queues").split(","))
    return set()


def _gpu_workers(services: dict) -> dict:
    """Every service whose Celery worker consumes the scoring queue."""
    return {name: svc for name, svc in services.items() if settings.SCORING_QUEUE in _worker_queues(svc)}


def _nvidia_devices(svc: dict) -> list[dict]:
    devices = svc.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
    return [device for device in devices if device.get("driver") == "nvidia"]


def test_compose_has_every_service_the_pipeline_needs():
    assert {"postgres", "redis", "web", "cpu-worker", "beat", "migrate"} <= set(SERVICES)
    assert _gpu_workers(SERVICES), "no service consumes the gpu queue"


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
    consumed = set().union(*(_worker_queues(svc) for svc in APP_SERVICES.values()))
    routed = {route["queue"] for route in celery_app.conf.task_routes.values()}
    assert routed | {celery_app.conf.task_default_queue} <= consumed


def test_a_gpu_worker_takes_scoring_first_then_explanations_then_shadow_scoring_and_checks():
    # kombu's Redis transport takes the lowest priority number first, across the queues a worker
    # consumes (-Q gpu,checks); the order within the gpu queue is asserted on a real Redis in
    # tests/scoring/test_pipeline_reliability.py
    def priority(task: str) -> int:
        return celery_app.amqp.router.route({}, task)["priority"]

    scoring = priority("scoring.tasks.score_batch")
    explaining = priority("explanations.tasks.explain_batch")
    later = {
        priority(task)
        for task in (
            "scoring.tasks.shadow_score_batch",
            "scoring.tasks.compare_models",
            "explanations.tasks.canary_check",
        )
    }
    assert scoring < explaining < min(later)


@pytest.mark.parametrize("name", sorted(_gpu_workers(EVERY_SERVICE)))
def test_every_gpu_worker_reserves_an_nvidia_device_and_consumes_the_model_queues(name):
    worker = EVERY_SERVICE[name]
    devices = _nvidia_devices(worker)
    assert len(devices) == 1 and "gpu" in devices[0]["capabilities"]
    assert _worker_queues(worker) == {"gpu", "checks"}
    assert worker["environment"]["SCORING_DEVICE"] == "cuda"


@pytest.mark.parametrize("name", sorted(_gpu_workers(EVERY_SERVICE)))
def test_a_gpu_worker_that_cannot_use_its_device_is_an_unhealthy_container(name):
    test = EVERY_SERVICE[name]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "manage.py"] and test[3] == "worker_health"
    assert "worker_health" in get_commands()


def test_each_gpu_worker_is_pinned_to_a_device_of_its_own_under_a_node_name_of_its_own():
    # `count: 1` hands every service (and every --scale replica) the first GPU: pin by device_ids.
    reserving = {name: svc for name, svc in EVERY_SERVICE.items() if _nvidia_devices(svc)}
    assert set(reserving) == set(_gpu_workers(EVERY_SERVICE))
    assert len(reserving) >= 2, "the commented template for a second GPU is missing"
    device_ids, node_names = [], []
    for name, svc in reserving.items():
        for device in _nvidia_devices(svc):
            assert "count" not in device, f"{name} reserves GPUs by count"
            assert device.get("device_ids"), f"{name} names no device_ids"
            device_ids += [str(device_id) for device_id in device["device_ids"]]
        node_names.append(_option(svc["command"], "-n", "--hostname"))
    assert len(device_ids) == len(set(device_ids)), f"a GPU is shared: {sorted(device_ids)}"
    assert None not in node_names and len(node_names) == len(set(node_names)), node_names


# `docker compose run` options that take a value (the service name follows the options).
_RUN_VALUE_OPTIONS = {
    "-e",
    "--env",
    "-u",
    "--user",
    "-v",
    "--volume",
    "-w",
    "--workdir",
    "--name",
    "--entrypoint",
    "-l",
    "--label",
    "-p",
    "--publish",
}


def _services_run_in(text: str) -> list[str]:
    names = []
    for match in re.finditer(r"docker[ -]compose run ([^\n`]*)", text):
        tokens = iter(shlex.split(match.group(1), comments=False, posix=True))
        for token in tokens:
            if token in _RUN_VALUE_OPTIONS:
                next(tokens, None)
            elif not token.startswith("-"):
                names.append(token)
                break
    return names


def test_every_docker_compose_run_in_the_docs_names_a_service_that_exists():
    compose_comments = "\n".join(line for line in COMPOSE_TEXT.splitlines() if line.lstrip().startswith("#"))
    readme = (ROOT / "README.md").read_text()
    named = _services_run_in(compose_comments) + _services_run_in(readme)
    assert "gpu-worker-0" in _services_run_in(compose_comments), "the first-time training command"
    for name in named:
        assert name in SERVICES, f"`docker compose run {name}` names no service of docker-compose.yml"


def test_the_compose_gpu_profile_has_the_gpu_values_and_every_app_service_gets_it():
    profile = {name: str(value) for name, value in COMPOSE["x-gpu-profile"].items()}
    assert profile == GPU_PROFILE
    for name, svc in APP_SERVICES.items():
        environment = {key: str(value) for key, value in svc.get("environment", {}).items()}
        assert GPU_PROFILE.items() <= environment.items(), f"{name} misses the GPU profile"


def test_env_example_lists_the_gpu_profile_with_the_same_values():
    lines = (ROOT / ".env.example").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# GPU profile"))
    block = {}
    for line in lines[start + 1 :]:
        if not line.startswith("#"):
            break
        if assignment := re.fullmatch(r"# ?([A-Z][A-Z0-9_]*)=(\S+)", line):
            block[assignment.group(1)] = assignment.group(2)
    assert block == GPU_PROFILE


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


def _dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction, continuation lines joined, comments dropped."""
    instructions, current = [], ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        instruction, _, arguments = (current + stripped).partition(" ")
        instructions.append((instruction.upper(), arguments.strip()))
        current = ""
    return instructions


def _dockerfile_env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    env = {}
    for instruction, arguments in instructions:
        if instruction == "ENV":
            env.update(token.split("=", 1) for token in shlex.split(arguments))
    return env


def test_the_image_creates_the_folders_the_app_writes_owned_by_the_app_user_where_compose_mounts_them():
    instructions = _dockerfile_instructions()
    env = _dockerfile_env(instructions)
    user_at = next(i for i, (instruction, _) in enumerate(instructions) if instruction == "USER")
    user = instructions[user_at][1]
    # Every shell step that runs as root, before USER, in order.
    steps = [
        shlex.split(step)
        for instruction, arguments in instructions[:user_at]
        if instruction == "RUN"
        for step in arguments.split("&&")
    ]
    useradd = next((step for step in steps if step[0] == "useradd"), None)
    assert useradd, f"the image does not create the user {user} before USER"
    assert useradd[-1] == user and _option(useradd, "--uid", "-u") == "1000"
    made = [
        (i, PurePosixPath(p))
        for i, step in enumerate(steps)
        if step[0] == "mkdir"
        for p in step[1:]
        if not p.startswith("-")
    ]
    owned = [
        (i, PurePosixPath(p))
        for i, step in enumerate(steps)
        if step[0] == "chown" and "-R" in step and step[2].split(":")[0] in {user, "1000"}
        for p in step[3:]
    ]

    var_dir = PurePosixPath(env["CLAIMWATCH_VAR_DIR"])
    models_dir = PurePosixPath(env["MODELS_DIR"])
    mounts = {
        name: PurePosixPath(volume.split(":")[1])
        for name, svc in APP_SERVICES.items()
        for volume in svc.get("volumes", [])
        if volume.split(":")[0] == "models"
    }
    assert mounts and set(mounts.values()) == {models_dir}, f"MODELS_DIR={models_dir}, mounts {mounts}"
    assert _gpu_workers(SERVICES).keys() <= mounts.keys(), "a GPU worker cannot read the models"
    assert models_dir.is_relative_to(var_dir)

    # The folders the app writes under VAR_DIR (settings' static root and broker folder,
    # bench_pipeline's logs), wherever the image puts VAR_DIR.
    wanted = {var_dir, models_dir, var_dir / "logs"}
    for path in (settings.STATIC_ROOT, settings.BROKER_DIR):
        if Path(path).is_relative_to(settings.VAR_DIR):
            wanted.add(var_dir / Path(path).relative_to(settings.VAR_DIR).as_posix())
    for folder in sorted(wanted):
        created = [i for i, path in made if path.is_relative_to(folder)]
        assert created, f"the image does not create {folder}"
        chowned = [i for i, path in owned if folder.is_relative_to(path) and i > min(created)]
        assert chowned, f"{folder} is not chowned to {user} after it is created, before USER"


# --- the web container's healthcheck, against the app as production runs it (DEBUG off) ---------


@contextmanager
def _wsgi_server() -> Iterator[int]:
    """The Django app on a free local port (its middleware built now, with the current settings)."""
    from django.core.wsgi import get_wsgi_application

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    from django.db import connections

    application = get_wsgi_application()

    def app(environ, start_response):  # the server thread leaves no database connection open
        try:
            return application(environ, start_response)
        finally:
            connections.close_all()

    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()


def _run_web_healthcheck(port: int, allowed_hosts: str) -> subprocess.CompletedProcess:
    test = SERVICES["web"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"] and "127.0.0.1:8000/readyz" in test[3]
    code = test[3].replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    env = {"PATH": os.environ.get("PATH", ""), "ALLOWED_HOSTS": allowed_hosts}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def production_like(settings, seeded_transactional_db):
    """What DEBUG=0 turns on that stands between a plain HTTP request and a view."""
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["claimwatch.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    return settings


def test_the_compose_web_healthcheck_passes_with_debug_off_and_fails_when_the_web_cannot_serve(
    production_like, monkeypatch
):
    """It asks /readyz: the web stays in service while the pipeline is unhealthy (here no active
    model, so /healthz answers 503), and is reported when it cannot reach its database."""
    import compliance_site.health as health

    with _wsgi_server() as port:
        alive = _run_web_healthcheck(port, "claimwatch.example.com,.example.com")
        pipeline = _run_pipeline_check(port)
        monkeypatch.setattr(health, "_database", lambda: {"ok": False, "error": "connection refused"})
        unavailable = _run_web_healthcheck(port, "claimwatch.example.com")

    assert alive.returncode == 0, alive.stderr
    assert pipeline == 503
    assert unavailable.returncode != 0 and "503" in unavailable.stderr


def _run_pipeline_check(port: int) -> int:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/healthz",
        headers={"Host": "claimwatch.example.com", "X-Forwarded-Proto": "https"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (a local http URL)
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
