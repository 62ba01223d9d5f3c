"""Real services for integration tests: a private redis-server, real Celery worker and beat
processes, and pointing this test process's Celery app at a given broker."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from compliance_site.celery import app as celery_app
from core.processes import BeatProcess, WorkerProcess, wait_until

ROOT = Path(settings.BASE_DIR)
LOG_DIR = ROOT / "test-artifacts" / "logs"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


class CeleryWorker(WorkerProcess):
    """A real worker on the test database, logging under test-artifacts/logs/. It computes on
    the CPU unless SCORING_DEVICE is given (so it starts without probing for a GPU)."""

    def __init__(
        self, *, broker_url: str, queues: str = "gpu,default", name: str = "worker", **env: str
    ) -> None:
        env.setdefault("SCORING_DEVICE", "cpu")
        super().__init__(broker_url=broker_url, queues=queues, name=name, log_dir=LOG_DIR, **env)


class CeleryBeat(BeatProcess):
    """A real `celery beat` (the sweeper) on the test database."""

    def __init__(self, *, broker_url: str, name: str = "beat", **env: str) -> None:
        super().__init__(broker_url=broker_url, name=name, log_dir=LOG_DIR, **env)


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


def published(queue: str) -> list[tuple[str, list]]:
    """Take every message waiting in `queue` on this process's broker (the in-memory one in
    tests): (task name, positional args) of each, in the order a worker takes them: oldest
    first, except that on Redis a lower priority number goes first (core/queues.py). Call it once
    before the code under test too, to start from an empty queue."""
    taken = []
    with celery_app.connection_for_write() as connection:
        channel = connection.default_channel
        while (message := channel.basic_get(queue, no_ack=True)) is not None:
            args, _kwargs, _embed = message.decode()
            taken.append((message.headers["task"], list(args)))
    return taken
