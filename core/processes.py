"""Start and stop real Celery worker and beat processes (benchmarks and integration tests use them)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection


def wait_until(
    predicate: Callable[[], bool], *, timeout: float, interval: float = 0.1, what: str = "it"
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def current_database_url() -> str:
    """A URL for the database this process is connected to (a test database included)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    if connection.vendor == "postgresql":
        auth = db["USER"] or "postgres"
        if db.get("PASSWORD"):
            auth += f":{db['PASSWORD']}"
        return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    raise RuntimeError(f"no worker support for {connection.vendor}")


class CeleryProcess:
    """A real `celery` process on `broker_url` and this process's database, in its own process
    group so that kill() reaches its pool children too. Subclasses give the command line."""

    ready_marker = b""

    def __init__(self, *, broker_url: str, name: str, log_dir: Path, **env: str) -> None:
        self.broker_url = broker_url
        self.name = name
        self.env = env
        self.process: subprocess.Popen | None = None
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{name}-{os.getpid()}-{time.time_ns()}.log"
        self._log = None

    def argv(self) -> list[str]:
        raise NotImplementedError

    def start(self, *, timeout: float = 90) -> CeleryProcess:
        env = {
            **os.environ,
            "DATABASE_URL": current_database_url(),
            "CELERY_BROKER_URL": self.broker_url,
            "PYTHONUNBUFFERED": "1",
            **self.env,
        }
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
            [sys.executable, "-m", "celery", "-A", "compliance_site", *self.argv()],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_until(
            lambda: self.ready_marker in self.log_path.read_bytes() or self.process.poll() is not None,
            timeout=timeout,
            what=f"celery {self.name} to be ready",
        )
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited at start:\n{self.log()}")
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the process and its children at once: no chance to ack or requeue."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if self._log:
            self._log.close()
            self._log = None


class WorkerProcess(CeleryProcess):
    """A `celery worker` (prefork, concurrency 1) consuming `queues`."""

    ready_marker = b" ready."

    def __init__(
        self, *, broker_url: str, queues: str = "gpu,default", name: str = "worker", log_dir: Path, **env: str
    ) -> None:
        super().__init__(broker_url=broker_url, name=name, log_dir=log_dir, **env)
        self.queues = queues

    def argv(self) -> list[str]:
        return [
            "worker",
            "-Q",
            self.queues,
            "--pool",
            "prefork",
            "--concurrency",
            "1",
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"{self.name}-{os.getpid()}@%h",
            "--loglevel",
            "INFO",
        ]


class BeatProcess(CeleryProcess):
    """`celery beat`: publishes the periodic tasks (the sweeper, the monitoring
    refresh) with its own schedule file, so it never shares state with another beat."""

    ready_marker = b"beat: Starting..."

    def __init__(self, *, broker_url: str, name: str = "beat", log_dir: Path, **env: str) -> None:
        super().__init__(broker_url=broker_url, name=name, log_dir=log_dir, **env)
        self.schedule_path = log_dir / f"{name}-{os.getpid()}-{time.time_ns()}.schedule"

    def argv(self) -> list[str]:
        return ["beat", "--schedule", str(self.schedule_path), "--loglevel", "INFO"]

    def stop(self) -> None:
        super().stop()
        for leftover in self.schedule_path.parent.glob(f"{self.schedule_path.name}*"):
            leftover.unlink(missing_ok=True)
