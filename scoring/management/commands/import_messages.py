"""Import messages from a JSONL or CSV file through the same service as the bulk API."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime
from tqdm import tqdm

from scoring.services.ingest import IncomingMessage, IngestInvalid, messages_ingest_bulk

FIELDS = ("external_id", "body", "sender", "channel", "received_at")


def _item(raw: Any) -> IncomingMessage | IngestInvalid:
    if not isinstance(raw, dict):
        return IngestInvalid("not a JSON object")
    for field in ("external_id", "body", "sender", "channel"):
        if field in raw and raw[field] is not None and not isinstance(raw[field], str):
            return IngestInvalid(f"{field} must be a string", field=field)
    received_at = None
    if raw.get("received_at"):
        received_at = parse_datetime(str(raw["received_at"]))
        if received_at is None:
            return IngestInvalid("received_at is not an ISO date-time", field="received_at")
    external_id = raw.get("external_id") or raw.get("id")
    if external_id is None:
        return IngestInvalid("external_id is missing", field="external_id")
    return IncomingMessage(
        external_id=str(external_id),
        body=raw.get("body") or "",
        sender=raw.get("sender") or "",
        channel=raw.get("channel") or "other",
        received_at=received_at,
    )


Row = tuple[int, IncomingMessage | IngestInvalid]


def _read_jsonl(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8", errors="strict") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                yield line_number, IngestInvalid(f"invalid JSON ({exc.msg})", code="invalid_json")
                continue
            yield line_number, _item(raw)


def _read_csv(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8", errors="strict", newline="") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or "body" not in reader.fieldnames:
            raise CommandError("The CSV needs a header row with at least external_id (or id) and body.")
        for line_number, row in enumerate(reader, start=2):
            yield line_number, _item({k: v for k, v in row.items() if k in (*FIELDS, "id")})


class Command(BaseCommand):
    help = "Import messages from a JSONL or CSV file (external_id|id, body, sender, channel, received_at)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", choices=["jsonl", "csv"], help="Default: from the file extension.")
        parser.add_argument("--as-user", help="Record this user as the submitter.")
        parser.add_argument("--chunk", type=int, default=settings.BULK_MAX_ITEMS)

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path} does not exist.")
        fmt = options["format"] or ("csv" if path.suffix.lower() == ".csv" else "jsonl")
        user = None
        if options["as_user"]:
            user = get_user_model().objects.filter(username=options["as_user"]).first()
            if user is None:
                raise CommandError(f"No user {options['as_user']!r}.")
        reader = _read_csv(path) if fmt == "csv" else _read_jsonl(path)
        totals = {"created": 0, "duplicate": 0, "error": 0}
        errors: list[str] = []
        chunk: list[Row] = []
        try:
            with tqdm(desc=f"importing {path.name}", unit="msg") as progress:
                for item in reader:
                    chunk.append(item)
                    if len(chunk) >= options["chunk"]:
                        self._flush(chunk, user, totals, errors, progress)
                        chunk = []
                self._flush(chunk, user, totals, errors, progress)
        except UnicodeDecodeError as exc:
            raise CommandError(
                f"{path} is not UTF-8 text ({exc}); nothing after the last full chunk was read."
            ) from exc
        for error in errors[:20]:
            self.stderr.write(error)
        if len(errors) > 20:
            self.stderr.write(f"... and {len(errors) - 20} more errors")
        self.stdout.write(
            f"created {totals['created']}, duplicates {totals['duplicate']}, errors {totals['error']}"
        )

    @staticmethod
    def _flush(chunk: list[Row], user, totals, errors, progress) -> None:
        if not chunk:
            return
        results = messages_ingest_bulk(items=[item for _, item in chunk], submitted_by=user)
        for (line, _), result in zip(chunk, results, strict=True):
            totals[result.status] += 1
            if result.status == "error":
                errors.append(f"line {line}: {result.error}")
        progress.update(len(chunk))
