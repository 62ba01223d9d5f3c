"""Where audit checkpoints are kept: outside the database, append-only.

The store is a setting, AUDIT_CHECKPOINT_STORE (a dotted path to a class), so that a deployment
can put checkpoints on WORM storage. The interface is two methods:

    class MyStore:
        def __init__(self, *, log_name: str) -> None: ...   # one log per database
        def append(self, line: str) -> None: ...            # add one checkpoint; never overwrite
        def lines(self) -> Iterable[str]: ...               # every checkpoint, oldest first;
                                                            # CheckpointLogMissing / CheckpointLogUnreadable
        def tail(self, n: int) -> list[str]: ...            # the last n (the writer's read)
        location: str                                        # where, in words, for the pages

An object-lock store (S3 Object Lock in compliance mode, Azure immutable blobs, GCS bucket lock)
writes each line as its own object under `log_name/` with a name that sorts by time and a
retention period, and lists them in order; `append` must refuse to replace an existing object.
Nothing in the application can then delete or rewrite a checkpoint, whoever controls the
database or the application's host.

The default, FileCheckpointStore, appends to one JSON-lines file per database under
AUDIT_CHECKPOINT_DIR. The application's database role cannot reach it; on its own it does not
stop the application's operating-system user from rewriting it, which a deployment prevents by
making the file append-only (`chattr +a` by root on Linux, so that even its owner can only add
lines) or by shipping each line elsewhere (every checkpoint is also logged at INFO on the
`claimwatch.audit` logger, for a central log store).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string

TAIL_BYTES = 64 * 1024


class CheckpointLogUnreadable(Exception):
    """The checkpoint log exists but cannot be read (permissions, not a file, an I/O error): the
    audit reports it as a finding of its own (reviews.audit, CHECKPOINT_LOG_UNAVAILABLE)."""


class CheckpointLogMissing(CheckpointLogUnreadable):
    """The checkpoint log does not exist: never written yet (a new deployment, a checkpoint task
    that has not run) or removed; the audit tells the two apart only by the records' age."""


class CheckpointStore(Protocol):
    location: str

    def append(self, line: str) -> None: ...

    def lines(self) -> Iterable[str]: ...

    def tail(self, n: int) -> list[str]: ...


class FileCheckpointStore:
    """One append-only JSON-lines file per database: AUDIT_CHECKPOINT_DIR/<log_name>.jsonl."""

    def __init__(self, *, log_name: str, directory: Path | None = None) -> None:
        self.directory = Path(directory or settings.AUDIT_CHECKPOINT_DIR)
        self.path = self.directory / f"{log_name}.jsonl"
        self.location = str(self.path)

    def append(self, line: str) -> None:
        if "\n" in line:
            raise ValueError("A checkpoint is one line.")
        self.directory.mkdir(parents=True, exist_ok=True)
        # O_APPEND: every write lands at the end, whatever else has the file open.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            os.write(fd, (line + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def lines(self) -> Iterable[str]:
        if not self.path.exists():
            raise CheckpointLogMissing(f"{self.path} does not exist")
        try:
            return self.path.read_text(encoding="ascii", errors="replace").splitlines()
        except OSError as exc:
            raise CheckpointLogUnreadable(f"{self.path} cannot be read ({exc.strerror or exc})") from exc

    def tail(self, n: int) -> list[str]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            chunk = handle.read().decode("ascii", errors="replace")
        lines = chunk.splitlines()
        if size > TAIL_BYTES:
            lines = lines[1:]  # the first line of the chunk may be cut
        if len(lines) < n and size > TAIL_BYTES:
            return list(self.lines())[-n:]
        return lines[-n:]


def checkpoint_log_name(database: dict | None = None) -> str:
    """One log per database (`<vendor>-<database name>`), so that a test database, a throw-away
    one or another deployment never writes into this one's log."""
    database = database or connection.settings_dict
    vendor = "sqlite" if "sqlite" in database["ENGINE"] else database["ENGINE"].rsplit(".", 1)[-1]
    name = os.path.basename(str(database["NAME"])) or "default"
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{vendor}-{name}")


def checkpoint_store() -> CheckpointStore:
    """The configured store (AUDIT_CHECKPOINT_STORE) for this database's log."""
    store_class = import_string(settings.AUDIT_CHECKPOINT_STORE)
    return store_class(log_name=checkpoint_log_name())


def checkpoint_keys() -> list[bytes]:
    """The key that signs (AUDIT_CHECKPOINT_KEY), then the retired ones that still verify."""
    return [
        key.encode("utf-8") for key in [settings.AUDIT_CHECKPOINT_KEY, *settings.AUDIT_CHECKPOINT_OLD_KEYS]
    ]
