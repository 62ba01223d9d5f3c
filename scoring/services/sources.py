"""Storing what the message sources read (scoring.sources): emails and chat lines become
messages, linked into conversations.

Threads. An email joins the conversation of the first message it refers to (References, root
first, then In-Reply-To) that is already stored or earlier in the same batch; failing that, the
conversation keyed by its thread root ("email:<first reference>"), so replies that arrive before
their root still meet; a message that refers to nothing joins a conversation that a reply stored
before it opened under its own Message-ID, else the one of its normalised subject ("Re:", "Fwd:",
"AW:", "[list]" tags stripped, case folded) and its set of participants (From, To, Cc), else a
conversation of its own. A chat line joins the conversation its source names (a Slack channel, a
transcript's conversation_id).

Everything one call stores happens in one transaction: a message is stored with its
conversation or not at all, and a conversation none of whose messages could be stored is not
left behind."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from scoring.models import Conversation, Message
from scoring.services.ingest import (
    BulkItemResult,
    IncomingMessage,
    IngestInvalid,
    is_in_the_future,
    messages_ingest_bulk,
)
from scoring.sources.errors import SourceError
from scoring.sources.mail import MailLimits
from scoring.sources.slack import ExportLimits
from scoring.sources.types import SourceMessage
from scoring.text import unstorable

_SUBJECT_PREFIX = re.compile(
    r"^\s*(?:(?:re|fw|fwd|aw|wg|sv|vs|antw|tr|rif|r|ref)\s*(?:\[\d+\])?\s*:|\[[^\]]{1,40}\])\s*",
    re.IGNORECASE,
)
_SPACES = re.compile(r"\s+")
KEY_LENGTH = 300
TITLE_LENGTH = 300


def mail_limits() -> MailLimits:
    """The email limits in force (settings EMAIL_*, ARCHIVE_*)."""
    return MailLimits(
        max_message_bytes=settings.EMAIL_MAX_MESSAGE_BYTES,
        max_attachment_bytes=settings.EMAIL_MAX_ATTACHMENT_BYTES,
        max_parts=settings.EMAIL_MAX_PARTS,
        max_depth=settings.EMAIL_MAX_DEPTH,
        max_archive_bytes=settings.ARCHIVE_MAX_BYTES,
        max_archive_ratio=settings.ARCHIVE_MAX_RATIO,
        max_archive_members=settings.ARCHIVE_MAX_MEMBERS,
        max_document_pages=settings.EMAIL_MAX_DOCUMENT_PAGES,
        max_body_chars=settings.MAX_BODY_CHARS,
    )


def export_limits() -> ExportLimits:
    """How far a zipped Slack export may expand (settings SLACK_EXPORT_MAX_BYTES, ARCHIVE_MAX_RATIO)."""
    return ExportLimits(max_bytes=settings.SLACK_EXPORT_MAX_BYTES, max_ratio=settings.ARCHIVE_MAX_RATIO)


def parse_processes(total: int | None) -> int:
    """How many processes parse an mbox of `total` messages (IMPORT_PARSE_PROCESSES from
    IMPORT_PARALLEL_FROM messages on; one, this process, below it)."""
    if total is None or total < settings.IMPORT_PARALLEL_FROM:
        return 1
    return settings.IMPORT_PARSE_PROCESSES


def normalised_subject(subject: str) -> str:
    """The subject without reply/forward prefixes and list tags, case folded, spaces collapsed."""
    text = subject or ""
    while True:
        stripped = _SUBJECT_PREFIX.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    return _SPACES.sub(" ", text).strip().casefold()


def _key(prefix: str, value: str) -> str:
    key = f"{prefix}:{value}"
    if len(key) <= KEY_LENGTH:
        return key
    return f"{prefix}:sha256:{hashlib.sha256(value.encode()).hexdigest()}"


def _subject_key(item: SourceMessage) -> str | None:
    subject = normalised_subject(item.subject)
    if not subject:
        return None
    digest = hashlib.sha256(f"{subject}\x1f{','.join(item.participants)}".encode()).hexdigest()
    return f"subject:{digest}"


def _conversation_keys(items: Sequence[SourceMessage | None]) -> list[tuple[str, str, str] | None]:
    """(key, kind, title) of each item's conversation, or None (see the module docstring)."""
    emails = [i for i in items if i is not None and i.channel == "email"]
    wanted = {ref for i in emails for ref in (*i.thread_refs, i.message_id) if ref}
    stored: dict[str, int] = {}
    if wanted:
        rows = Message.objects.filter(message_id_header__in=list(wanted), conversation__isnull=False)
        stored = dict(rows.values_list("message_id_header", "conversation__key"))
    own_keys = {_key("email", i.message_id) for i in emails if i.message_id}
    opened = set(Conversation.objects.filter(key__in=list(own_keys)).values_list("key", flat=True))
    seen: dict[str, str] = dict(stored)  # Message-ID -> conversation key
    out: list[tuple[str, str, str] | None] = []
    for item in items:
        if item is None:
            out.append(None)
            continue
        if item.conversation_key:
            # A transcript's conversation id and title are the exporter's text, of any length: a long
            # key is hashed (cut, two ids alike in their first 300 characters were one conversation)
            # and the title cut to its column (PostgreSQL refused the whole import for it).
            prefix, _, value = item.conversation_key.partition(":")
            out.append((_key(prefix, value), Conversation.Kind.CHAT, item.conversation_title[:TITLE_LENGTH]))
            continue
        if item.channel != "email":
            out.append(None)
            continue
        key = next((seen[ref] for ref in item.thread_refs if ref in seen), None)
        own = _key("email", item.message_id) if item.message_id else None
        if key is None and item.thread_refs:
            key = _key("email", item.thread_refs[0])
        if key is None and own in opened:
            key = own
        if key is None:
            key = _subject_key(item) or own or _key("email", item.external_id)
        if item.message_id:
            seen[item.message_id] = key
        out.append((key, Conversation.Kind.EMAIL_THREAD, (item.subject or "(no subject)")[:TITLE_LENGTH]))
    return out


def _conversation_ids(keys: list[tuple[str, str, str] | None]) -> dict[str, int]:
    wanted = {k[0]: k for k in keys if k is not None}
    if not wanted:
        return {}
    found = dict(Conversation.objects.filter(key__in=list(wanted)).values_list("key", "pk"))
    missing = [
        Conversation(key=key, kind=kind, title=title)
        for key, kind, title in wanted.values()
        if key not in found
    ]
    if missing:
        # Two imports may open the same conversation at once: the unique key decides, both use it.
        Conversation.objects.bulk_create(missing, ignore_conflicts=True)
        found.update(Conversation.objects.filter(key__in=[c.key for c in missing]).values_list("key", "pk"))
    return found


def _incoming(item: SourceMessage, conversation_id: int | None) -> IncomingMessage:
    received_at, headers = item.received_at, item.headers
    if received_at is not None and is_in_the_future(received_at):
        # A source's date is the sender's clock (an email's Date header, a chat export's time):
        # one in the future does not refuse the message, which is received now, as it arrives.
        received_at = None
        note = f"the date {item.received_at.isoformat()} is in the future: received_at is the arrival time"
        headers = {**headers, "notes": [*headers.get("notes", []), note]}
    return IncomingMessage(
        external_id=item.external_id,
        body=item.body,
        sender=item.sender[:300],
        channel=item.channel,
        received_at=received_at,
        subject=item.subject,
        headers=headers,
        attachments=item.attachments,
        message_id_header=item.message_id,
        conversation_id=conversation_id,
    )


def _strings(value, path: str):
    """(path, text) of every string in a SourceMessage field: headers and attachments nest."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _strings(str(key), path)
            yield from _strings(inner, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, inner in enumerate(value):
            yield from _strings(inner, f"{path}[{index}]")


def _storable(item: SourceMessage | SourceError) -> SourceMessage | SourceError:
    """The item, or a SourceError naming the first field no database stores (scoring.text.unstorable):
    a chat export's channel name or an attachment's name with a lone surrogate failed the whole
    import at the database, not its own row."""
    if isinstance(item, SourceError):
        return item
    for name in (
        "external_id",
        "body",
        "sender",
        "subject",
        "message_id",
        "thread_refs",
        "participants",
        "conversation_key",
        "conversation_title",
        "headers",
        "attachments",
    ):
        for path, text in _strings(getattr(item, name), name):
            reason = unstorable(text)
            if reason is not None:
                return SourceError("invalid", f"{path} {reason}.")
    return item


def sources_ingest(
    *,
    items: Sequence[SourceMessage | SourceError],
    submitted_by: AbstractBaseUser | None = None,
    gather: bool = False,
) -> list[BulkItemResult]:
    """Store what a source read, one result per item in order (created, duplicate, error with
    the source's code), in one transaction: messages with their conversations (module
    docstring), queued for scoring after commit. Idempotent on external_id."""
    items = [_storable(item) for item in items]
    with transaction.atomic():
        readable = [item if isinstance(item, SourceMessage) else None for item in items]
        keys = _conversation_keys(readable)
        ids = _conversation_ids(keys)
        incoming: list[IncomingMessage | IngestInvalid] = []
        for item, key in zip(items, keys, strict=True):
            if isinstance(item, SourceError):
                incoming.append(IngestInvalid(item.message, code=item.code))
            else:
                incoming.append(_incoming(item, ids.get(key[0]) if key else None))
        results = messages_ingest_bulk(items=incoming, submitted_by=submitted_by, gather=gather)
        if ids:
            Conversation.objects.filter(pk__in=list(ids.values()), messages__isnull=True).delete()
    return results


@dataclass
class ImportReport:
    """What an import did: counts and each refused item's position and reason; `partly_read`:
    each stored message with a part whose text could not be read (Attachment.unreadable: a
    charset that cannot be decoded, a broken or password-protected zip), with its position, the
    part and why: that part was not scored, and no reviewer sees it unless the message routes."""

    created: int = 0
    duplicate: int = 0
    error: int = 0
    errors: list[str] = field(default_factory=list)
    partly_read: list[str] = field(default_factory=list)

    @property
    def stored(self) -> int:
        return self.created + self.duplicate


def unreadable_parts(item: SourceMessage | SourceError) -> str:
    """The parts of a message read from a source whose text could not be read, each with the
    reason ("" when there is none)."""
    if not isinstance(item, SourceMessage):
        return ""
    return "; ".join(
        f"{a.get('name', '')!r} ({a.get('note', '').removeprefix('not scored: ')})"
        for a in item.attachments
        if a.get("unreadable")
    )


def sources_import(
    *,
    reads: Iterable[tuple[str, SourceMessage | SourceError]],
    submitted_by: AbstractBaseUser | None = None,
    chunk: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> ImportReport:
    """Store a source's reads (position, message or error) in chunks of `chunk` (one transaction
    each, sources_ingest), and report what happened, every refusal with its position. A message
    is stored whole or not at all; the good messages of a file are stored whatever its bad ones."""
    size = chunk or settings.BULK_MAX_ITEMS
    report = ImportReport()
    pending: list[tuple[str, SourceMessage | SourceError]] = []

    def flush() -> None:
        if not pending:
            return
        results = sources_ingest(items=[item for _, item in pending], submitted_by=submitted_by)
        for (position, item), result in zip(pending, results, strict=True):
            setattr(report, result.status, getattr(report, result.status) + 1)
            if result.status == "error":
                report.errors.append(f"{position}: {result.error}")
            elif result.status == "created" and (unread := unreadable_parts(item)):
                report.partly_read.append(f"{position}: stored, but not all of it was read: {unread}")
        if progress is not None:
            progress(len(pending))
        pending.clear()

    for read in reads:
        pending.append(read)
        if len(pending) >= size:
            flush()
    flush()
    return report
