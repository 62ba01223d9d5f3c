"""Which kind of file an import was given (`import_messages --format` overrides it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from scoring.sources.chat import looks_like_chat

FORMATS = ("jsonl", "csv", "eml", "mbox", "slack", "chat-jsonl", "chat-csv")
_HEADER_LINE = re.compile(rb"^[A-Za-z][A-Za-z0-9-]*:[ \t]")


def _first_line(path: Path) -> bytes:
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                return line
            continue
    return b""


def detect_format(path: Path) -> str:
    """One of FORMATS, from the folder's content, the file's extension and its first line."""
    if path.is_dir():
        return "slack" if (path / "channels.json").is_file() else "eml"
    suffix = path.suffix.lower()
    if suffix == ".eml":
        return "eml"
    if suffix in (".mbox", ".mbx", ".mbs"):
        return "mbox"
    if suffix == ".zip":
        return "slack"
    first = _first_line(path)
    if first.startswith(b"From "):
        return "mbox"
    if suffix == ".csv":
        header = first.decode("utf-8", errors="replace").strip().lstrip("\ufeff")
        return "chat-csv" if looks_like_chat([h.strip() for h in header.split(",")]) else "csv"
    try:
        keys = list(json.loads(first))
    except (ValueError, TypeError):
        keys = None
    if keys is not None:
        return "chat-jsonl" if looks_like_chat(keys) else "jsonl"
    if _HEADER_LINE.match(first):
        return "eml"
    return "jsonl"
