"""python manage.py import_messages PATH [--format ...] [--as-user NAME] [--chunk N]

Imports messages from, detected from PATH (scoring.sources.detect; --format forces it):
- `jsonl` / `csv`: rows of external_id|id, body, sender, channel, received_at;
- `eml`: one .eml file, or a folder of them; `mbox`: an mbox file;
- `slack`: a Slack workspace export (its folder or its .zip);
- `chat-jsonl` / `chat-csv`: chat transcripts (conversation_id, sender, sent_at, text).
Every refused message or row is reported with its position (line, message number, file) and the
rest are imported; a file in which nothing could be imported exits non-zero. A text file
(JSONL/CSV, chat transcripts) that is not UTF-8 throughout is refused whole, naming the line of
its first bad byte, before anything of it is stored. A progress bar goes to stderr."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime
from tqdm import tqdm

from scoring.services.ingest import IncomingMessage, IngestInvalid, messages_ingest_bulk
from scoring.services.sources import ImportReport, export_limits, mail_limits, parse_processes, sources_import
from scoring.sources.charsets import utf8_file_check
from scoring.sources.chat import read_chat_csv, read_chat_jsonl
from scoring.sources.detect import FORMATS, detect_format
from scoring.sources.errors import SourceError
from scoring.sources.mailboxes import count_mbox, eml_files, read_eml_files, read_mbox
from scoring.sources.slack import read_slack_export

FIELDS = ("external_id", "body", "sender", "channel", "received_at")
# Formats read as UTF-8 text, checked whole before anything is stored.
TEXT_FORMATS = ("jsonl", "csv", "chat-jsonl", "chat-csv")
# How long a CSV field may be: bodies up to this many times MAX_BODY_CHARS are read whole and
# refused by the body limit with their length (the rest of the file is imported); a longer
# field is reported as unreadable and reading goes on at the next line.
CSV_FIELD_FACTOR = 8


def _item(raw: Any) -> IncomingMessage | IngestInvalid:
    if not isinstance(raw, dict):
        return IngestInvalid("not a JSON object")
    for field in ("external_id", "body", "sender", "channel"):
        if field in raw and raw[field] is not None and not isinstance(raw[field], str):
            return IngestInvalid(f"{field} must be a string", field=field)
    received_at = None
    if raw.get("received_at"):
        try:
            received_at = parse_datetime(str(raw["received_at"]))
        except ValueError as exc:  # well formed, but no such moment: 2024-02-30, hour 25, offset +99:00
            return IngestInvalid(
                f"received_at {raw['received_at']!r} is not a valid date-time ({exc})", field="received_at"
            )
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
    with path.open(encoding="utf-8-sig", errors="strict") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                yield line_number, IngestInvalid(f"invalid JSON ({exc.msg})", code="invalid_json")
                continue
            yield line_number, _item(raw)


def csv_field_limit() -> int:
    return max(csv.field_size_limit(), CSV_FIELD_FACTOR * settings.MAX_BODY_CHARS)


def _read_csv(path: Path) -> Iterator[Row]:
    limit = csv_field_limit()
    previous = csv.field_size_limit(limit)
    try:
        with path.open(encoding="utf-8-sig", errors="strict", newline="") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames or "body" not in reader.fieldnames:
                raise CommandError("The CSV needs a header row with at least external_id (or id) and body.")
            while True:
                start = reader.line_num + 1
                try:
                    row = next(reader)
                except StopIteration:
                    break
                except csv.Error as exc:
                    yield (
                        start,
                        IngestInvalid(
                            f"the row cannot be read ({exc}: a field is longer than {limit:,} characters, "
                            f"{CSV_FIELD_FACTOR} times the body limit); reading goes on at the next line",
                            code="too_large",
                        ),
                    )
                    continue
                yield start, _item({k: v for k, v in row.items() if k in (*FIELDS, "id")})
    finally:
        csv.field_size_limit(previous)


class Command(BaseCommand):
    help = (
        "Import messages: JSONL/CSV rows, an .eml file or a folder of them, an mbox, a Slack export "
        "(folder or .zip), or a chat transcript (JSONL/CSV with conversation_id, sender, sent_at, text)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", choices=FORMATS, help="Default: detected from the path.")
        parser.add_argument("--as-user", help="Record this user as the submitter.")
        parser.add_argument("--chunk", type=int, default=settings.BULK_MAX_ITEMS)

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.exists():
            raise CommandError(f"{path} does not exist.")
        fmt = options["format"] or detect_format(path)
        user = None
        if options["as_user"]:
            user = get_user_model().objects.filter(username=options["as_user"]).first()
            if user is None:
                raise CommandError(f"No user {options['as_user']!r}.")
        try:
            if fmt in TEXT_FORMATS and path.is_file():
                # they are stored chunk by chunk as they are read: a file that cannot be read to
                # its end is refused before anything of it is stored
                utf8_file_check(path)
            if fmt in ("jsonl", "csv"):
                if not path.is_file():
                    raise CommandError(f"{path} is not a file.")
                report = self._rows(path, fmt, user, options["chunk"])
            else:
                report = self._source(path, fmt, user, options["chunk"])
        except SourceError as exc:
            raise CommandError(f"{path}: {exc} Nothing was imported from it.") from exc
        except UnicodeDecodeError as exc:  # checked before: the file changed while it was read
            raise CommandError(
                f"{path} is not UTF-8 text ({exc}); nothing after the last full chunk was read."
            ) from exc
        for error in report.errors[:20]:
            self.stderr.write(error)
        if len(report.errors) > 20:
            self.stderr.write(f"... and {len(report.errors) - 20} more errors")
        for line in report.partly_read[:20]:
            self.stderr.write(line)
        if len(report.partly_read) > 20:
            self.stderr.write(f"... and {len(report.partly_read) - 20} more messages not read whole")
        partly = f", of them not read whole {len(report.partly_read)}" if report.partly_read else ""
        self.stdout.write(
            f"created {report.created}{partly}, duplicates {report.duplicate}, errors {report.error}"
        )
        if report.error and not report.stored:
            raise CommandError(
                f"nothing was imported: all {report.error} {'items' if report.error > 1 else 'item'} of "
                f"{path.name} failed (read as {fmt}; --format chooses another reading)."
            )

    def _bar(self, desc: str, total: int | None) -> tqdm:
        return tqdm(desc=desc, total=total, unit="msg", file=sys.stderr, disable=None)

    def _source(self, path: Path, fmt: str, user, chunk: int) -> ImportReport:
        if fmt == "eml":
            files = eml_files(path) if path.is_dir() else [path]
            if not files:
                raise CommandError(f"{path} holds no .eml file.")
            reads, total = read_eml_files(files, root=path, limits=mail_limits()), len(files)
        elif fmt == "mbox":
            total = count_mbox(path)
            reads = read_mbox(path, limits=mail_limits(), processes=parse_processes(total))
        elif fmt == "slack":
            messages = read_slack_export(path, limits=export_limits())  # whole, or SourceError
            reads = ((f"{m.conversation_title} {m.headers.get('ts', '')}", m) for m in messages)
            total = len(messages)
        elif fmt == "chat-jsonl":
            reads, total = read_chat_jsonl(path), None
        else:
            reads, total = read_chat_csv(path), None
        with self._bar(f"importing {path.name}", total) as bar:
            return sources_import(reads=reads, submitted_by=user, chunk=chunk, progress=bar.update)

    def _rows(self, path: Path, fmt: str, user, chunk_size: int) -> ImportReport:
        reader = _read_csv(path) if fmt == "csv" else _read_jsonl(path)
        report = ImportReport()
        chunk: list[Row] = []
        with self._bar(f"importing {path.name}", None) as bar:
            for item in reader:
                chunk.append(item)
                if len(chunk) >= chunk_size:
                    self._flush(chunk, user, report, bar)
                    chunk = []
            self._flush(chunk, user, report, bar)
        return report

    @staticmethod
    def _flush(chunk: list[Row], user, report: ImportReport, bar) -> None:
        if not chunk:
            return
        results = messages_ingest_bulk(items=[item for _, item in chunk], submitted_by=user)
        for (line, _), result in zip(chunk, results, strict=True):
            setattr(report, result.status, getattr(report, result.status) + 1)
            if result.status == "error":
                report.errors.append(f"line {line}: {result.error}")
        bar.update(len(chunk))
