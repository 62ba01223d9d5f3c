"""Real services for integration tests: a private redis-server, real Celery worker processes,
and pointing this test process's Celery app at a given broker."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

from compliance_site.celery import app as celery_app

ROOT = Path(settings.BASE_DIR)
LOG_DIR = ROOT / "test-artifacts" / "logs"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate, *, timeout: float, interval: float = 0.1, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


class RedisServer:
    """A redis-server of our own on a free port, so tests can stop it (an outage) without
    touching anybody else's Redis."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            [
                shutil.which("redis-server"),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self.is_up, timeout=10, what="redis-server to accept connections")
        return self

    def is_up(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


def test_database_url() -> str:
    """The URL of the database this test run is using (pytest-django's test database)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    if connection.vendor == "postgresql":
        auth = db["USER"] or "postgres"
        if db.get("PASSWORD"):
            auth += f":{db['PASSWORD']}"
        return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    raise RuntimeError(f"no worker support for {connection.vendor}")


class CeleryWorker:
    """A real `celery worker` process on the given broker and this run's test database."""

    def __init__(
        self, *, broker_url: str, queues: str = "gpu,default", name: str = "worker", **env: str
    ) -> None:
        self.broker_url = broker_url
        self.queues = queues
        self.name = name
        self.env = env
        self.process: subprocess.Popen | None = None
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = LOG_DIR / f"{name}-{os.getpid()}-{free_port()}.log"

    def start(self, *, timeout: float = 60) -> CeleryWorker:
        env = {
            **os.environ,
            "DATABASE_URL": test_database_url(),
            "CELERY_BROKER_URL": self.broker_url,
            "PYTHONUNBUFFERED": "1",
            **self.env,
        }
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "compliance_site",
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
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: kill() reaches the pool children too
        )
        wait_until(
            lambda: b" ready." in self.log_path.read_bytes() or self.process.poll() is not None,
            timeout=timeout,
            what=f"celery worker {self.name} to be ready",
        )
        if self.process.poll() is not None:
            raise RuntimeError(f"worker exited at start:\n{self.log()}")
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the worker and its pool children at once: no chance to ack or requeue."""
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
        if getattr(self, "_log", None):
            self._log.close()


def _reset_celery_connections() -> None:
    # Drop (do not close) the cached pools: kombu shares pools between owners, and the next
    # publish builds fresh ones for the new URL.
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@contextmanager
def broker(url: str, transport_options: dict | None = None) -> Iterator[None]:
    """Point this process's Celery app (what the web code publishes with) at `url`."""
    keys = ("broker_url", "broker_read_url", "broker_write_url", "broker_transport_options")
    saved = {key: celery_app.conf[key] for key in keys}
    _reset_celery_connections()
    celery_app.conf.update(
        broker_url=url,
        broker_read_url=url,
        broker_write_url=url,
        broker_transport_options=transport_options or {},
    )
    try:
        yield
    finally:
        _reset_celery_connections()
        celery_app.conf.update(saved)
