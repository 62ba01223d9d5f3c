"""JSONL reading and writing for corpus rows: one JSON object per line, UTF-8, "\\n" endings."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from scoring.corpus.schema import CorpusError, validate_row


def row_line(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def rows_bytes(rows: Iterable[dict]) -> bytes:
    """Exactly the bytes `write_jsonl` writes for `rows`."""
    return "".join(row_line(row) for row in rows).encode("utf-8")


def validate_rows(rows: Iterable[dict], *, allow_extra_splits: bool = True) -> None:
    """Raise CorpusError naming the first bad rows."""
    problems = []
    for number, row in enumerate(rows, start=1):
        for problem in validate_row(row, allow_extra_splits=allow_extra_splits):
            row_id = row.get("id") if isinstance(row, dict) else None
            problems.append(f"row {number} ({row_id}): {problem}")
    if problems:
        shown = "; ".join(problems[:5])
        raise CorpusError(f"{len(problems)} problem(s) in the rows: {shown}")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write via a temporary file and a rename, so a failure leaves the old file as it was."""
    target = Path(path)
    if not target.parent.is_dir():
        raise CorpusError(f"directory {target.parent} does not exist")
    # mkstemp creates the file 0600; keep the old file's mode, or make a new one world-readable.
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_jsonl(rows: Iterable[dict], path: str | os.PathLike[str]) -> str:
    """Validate and write `rows`; returns the sha256 of the bytes written. Invalid rows raise
    CorpusError before anything is written."""
    rows = list(rows)
    validate_rows(rows)
    data = rows_bytes(rows)
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def read_jsonl(path: str | os.PathLike[str], *, validate: bool = True) -> list[dict]:
    """Read rows; a missing file, bad JSON or (with `validate`) a bad row raises CorpusError
    with the file and line number."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise CorpusError(f"{source} does not exist") from exc
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{source} is not UTF-8 text: {exc}") from exc
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{source}:{number}: not valid JSON ({exc.msg})") from exc
        if validate:
            problems = validate_row(row, allow_extra_splits=True)
            if problems:
                raise CorpusError(f"{source}:{number}: {'; '.join(problems)}")
        rows.append(row)
    return rows


def corpus_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of the file's bytes (what a model version records as its corpus)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
