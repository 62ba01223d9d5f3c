"""Generic chat transcripts: JSONL or CSV rows with conversation_id, sender, sent_at and text
(optional: external_id or id, channel "chat" or "sms", conversation_title). Each row is one
message of its own; rows of one conversation_id are one conversation."""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scoring.sources.errors import SourceError
from scoring.sources.types import SourceMessage
from scoring.text import unstorable

CHAT_FIELDS = ("conversation_id", "sender", "sent_at", "text")
CHANNELS = ("chat", "sms")
Read = tuple[str, SourceMessage | SourceError]


def parse_time(value: Any) -> datetime:
    """An ISO 8601 date-time (naive means UTC) or Unix seconds, as an aware datetime."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(float(value), UTC)
    if not isinstance(value, str) or not value.strip():
        raise ValueError("missing")
    text = value.strip()
    try:
        return datetime.fromtimestamp(float(text), UTC)
    except ValueError:
        pass
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def chat_row(raw: Any, *, key_prefix: str = "chat") -> SourceMessage:
    """One transcript row as a SourceMessage; raises SourceError(invalid_row) naming the field."""
    if not isinstance(raw, dict):
        raise SourceError(
            "invalid_row", "a row must be an object with conversation_id, sender, sent_at, text"
        )
    for name in CHAT_FIELDS:
        if raw.get(name) in (None, ""):
            raise SourceError("invalid_row", f"{name} is missing")
    for name in ("conversation_id", "sender", "text"):
        if not isinstance(raw[name], str | int) or isinstance(raw[name], bool):
            raise SourceError("invalid_row", f"{name} must be a string")
    try:
        sent_at = parse_time(raw["sent_at"])
    except (ValueError, OverflowError, OSError):
        raise SourceError("invalid_row", f"sent_at {raw['sent_at']!r} is not an ISO 8601 date-time") from None
    channel = str(raw.get("channel") or "chat")
    if channel not in CHANNELS:
        raise SourceError("invalid_row", f"channel must be one of {', '.join(CHANNELS)}, not {channel!r}")
    for name in ("conversation_id", "sender", "text", "external_id", "id", "conversation_title"):
        reason = unstorable(str(raw.get(name) or ""))
        if reason is not None:
            raise SourceError("invalid_row", f"{name} {reason}")
    conversation, sender, text = str(raw["conversation_id"]), str(raw["sender"]), str(raw["text"])
    external_id = raw.get("external_id") or raw.get("id")
    if not external_id:
        digest = hashlib.sha256(
            f"{conversation}\x1f{sender}\x1f{sent_at.isoformat()}\x1f{text}".encode()
        ).hexdigest()
        external_id = f"{key_prefix}:{digest[:32]}"
    return SourceMessage(
        external_id=str(external_id),
        body=text,
        sender=sender,
        channel=channel,
        received_at=sent_at,
        headers={"source": "chat transcript", "conversation_id": conversation},
        conversation_key=f"{key_prefix}:{conversation}",
        conversation_title=str(raw.get("conversation_title") or conversation),
    )


def _row(position: str, raw: Any) -> Read:
    try:
        return position, chat_row(raw)
    except SourceError as exc:
        return position, exc.at(position)


def read_chat_jsonl(path: Path) -> Iterator[Read]:
    with path.open(encoding="utf-8-sig", errors="strict") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                yield (
                    f"line {number}",
                    SourceError("invalid_json", f"invalid JSON ({exc.msg})", position=f"line {number}"),
                )
                continue
            yield _row(f"line {number}", raw)


def read_chat_csv(path: Path) -> Iterator[Read]:
    with path.open(encoding="utf-8-sig", errors="strict", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [f for f in CHAT_FIELDS if f not in (reader.fieldnames or [])]
        if missing:
            raise SourceError(
                "invalid_header",
                f"the chat CSV needs the columns {', '.join(CHAT_FIELDS)}; missing: {', '.join(missing)}",
            )
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:  # a field over the csv module's limit: this row only
                yield (
                    f"line {start}",
                    SourceError("too_large", f"the row cannot be read ({exc})").at(f"line {start}"),
                )
                continue
            yield _row(f"line {reader.line_num}", row)


def looks_like_chat(keys: list[str] | None) -> bool:
    """Whether a JSONL object's keys or a CSV header are a chat transcript's."""
    return bool(keys) and all(field in keys for field in CHAT_FIELDS)
