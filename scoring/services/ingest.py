"""Ingestion: a message is persisted before anything else happens, and never twice.

`external_id` is the idempotency key within a feed (the submitting account; messages submitted
without one form a feed of their own): the same id with the same body returns the stored
message; the same id with a different body is a conflict. Another feed's ids are neither seen
nor revealed: the same id from two feeds is two messages. A bulk request publishes its batches
as soon as its transaction commits; a single message is stored `received` and asks for a
gather, which batches whatever waits. When the broker is down a message simply stays
`received` and the sweeper gathers it later (scoring.services.queueing)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from scoring.constants import Channel
from scoring.errors import ScoringError
from scoring.models import Message
from scoring.selectors import feed_of, messages_of_feed
from scoring.text import has_content, unstorable


class IngestConflict(ScoringError):
    """The external id is already stored with a different body."""


class IngestInvalid(ScoringError):
    """The message itself is not acceptable (empty or oversized body, bad field)."""

    def __init__(self, message: str, *, code: str = "invalid", field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


@dataclass(frozen=True)
class IncomingMessage:
    """A message to store. The fields after `received_at` come from real sources (email, chat
    exports: scoring.services.sources) and stay empty for messages posted as JSON."""

    external_id: str
    body: str
    sender: str = ""
    channel: str = Channel.OTHER
    received_at: datetime | None = None
    subject: str = ""
    headers: dict = field(default_factory=dict)
    attachments: list = field(default_factory=list)
    message_id_header: str = ""
    conversation_id: int | None = None


@dataclass(frozen=True)
class IngestOutcome:
    message: Message
    created: bool


def body_sha256(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


_TEXT_FIELDS = ("external_id", "body", "sender", "subject", "message_id_header")


def _refuse_what_no_database_stores(name: str, text: str) -> None:
    """A JSON body or a JSONL row can spell a lone surrogate or a NUL as an escape; each gets this
    error, for its row of an import, instead of a crash of the whole import (scoring.text.unstorable).
    (Raw mail removes NULs before it gets here: scoring.sources.mail.)"""
    reason = unstorable(text)
    if reason is not None:
        raise IngestInvalid(f"{name} {reason}.", field=name)


def validate_incoming(item: IncomingMessage) -> None:
    """Domain checks shared by the API, the bulk API and the file import. A received_at may lie
    in the past without bound (archives are imported), in the future only within the clock skew
    allowed (is_in_the_future)."""
    if not item.external_id or not item.external_id.strip():
        raise IngestInvalid("external_id must be a non-empty string.", field="external_id")
    for name in _TEXT_FIELDS:
        _refuse_what_no_database_stores(name, getattr(item, name))
    if len(item.external_id) > 200:
        raise IngestInvalid("external_id is longer than 200 characters.", field="external_id")
    if not item.body or not item.body.strip():
        raise IngestInvalid("body must contain text.", code="empty_body", field="body")
    if len(item.body) > settings.MAX_BODY_CHARS:
        raise IngestInvalid(
            f"body has {len(item.body):,} characters; the limit is {settings.MAX_BODY_CHARS:,}.",
            code="too_large",
            field="body",
        )
    # The scorer's own rule (after the length check, so its cost is bounded): a body it would
    # refuse is not stored only to fail seconds later.
    if not has_content(item.body):
        raise IngestInvalid(
            "body must contain text: it holds only whitespace, control or format characters "
            "(such as a zero-width space or a soft hyphen), combining marks or U+FFFD, so there "
            "is nothing to score.",
            code="empty_body",
            field="body",
        )
    if item.channel not in Channel.values:
        raise IngestInvalid(f"channel must be one of {', '.join(Channel.values)}.", field="channel")
    if len(item.sender) > 300:
        raise IngestInvalid("sender is longer than 300 characters.", field="sender")
    if item.received_at is not None and not _representable_in_utc(item.received_at):
        raise IngestInvalid(
            f"received_at {item.received_at.isoformat()} is out of range: in UTC it falls before the "
            "year 1 or after the year 9999.",
            field="received_at",
        )
    if item.received_at is not None and is_in_the_future(item.received_at):
        raise IngestInvalid(
            f"received_at {item.received_at.isoformat()} is in the future: it may be at most "
            f"{settings.RECEIVED_AT_MAX_SKEW_SECONDS:,} seconds after this server's clock "
            f"({timezone.now().isoformat(timespec='seconds')}). Send the time the message was received.",
            field="received_at",
        )


def _representable_in_utc(moment: datetime) -> bool:
    """Whether an aware moment has a UTC date-time of its own (a naive one is read as UTC). Year 1
    at +01:00 is 1 BC in UTC: SQLite's backend fails on it at save, and PostgreSQL stores it, after
    which every read of that row fails ("timestamp too small"), the feed's whole status list with it."""
    if timezone.is_naive(moment):
        return True
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return False
    return True


def is_in_the_future(received_at: datetime) -> bool:
    """Whether a received_at lies later than now plus the clock skew allowed
    (RECEIVED_AT_MAX_SKEW_SECONDS). A naive one is read in the default time zone (UTC), as it is
    stored."""
    if timezone.is_naive(received_at):
        received_at = timezone.make_aware(received_at)
    return received_at > timezone.now() + timedelta(seconds=settings.RECEIVED_AT_MAX_SKEW_SECONDS)


def _new_message(item: IncomingMessage, submitted_by: AbstractBaseUser | None) -> Message:
    return Message(
        external_id=item.external_id,
        body=item.body,
        body_sha256=body_sha256(item.body),
        sender=item.sender,
        channel=item.channel,
        received_at=item.received_at or timezone.now(),
        submitted_by_id=feed_of(submitted_by),
        subject=item.subject[:500],
        headers=item.headers,
        attachments=item.attachments,
        message_id_header=item.message_id_header[:500],
        conversation_id=item.conversation_id,
    )


def _existing_outcome(existing: Message, item: IncomingMessage) -> IngestOutcome:
    if existing.body_sha256 != body_sha256(item.body):
        raise IngestConflict(
            f"external_id {item.external_id!r} is already stored with a different body "
            f"(message {existing.pk}); a message is immutable once ingested."
        )
    return IngestOutcome(message=existing, created=False)


def _request_scoring(message_ids: list[int]) -> None:
    if not message_ids:
        return
    from scoring.services.queueing import messages_enqueue_scoring

    # robust: the messages are committed whatever happens here; a publish that fails on a
    # database error leaves them `received` for the sweeper instead of failing the request.
    transaction.on_commit(lambda: messages_enqueue_scoring(message_ids=message_ids), robust=True)


def _request_gather() -> None:
    from scoring.services.queueing import messages_request_gather

    transaction.on_commit(messages_request_gather, robust=True)


def message_ingest(*, item: IncomingMessage, submitted_by: AbstractBaseUser | None = None) -> IngestOutcome:
    """Store one message (or return the identical stored one) as `received` and, after commit,
    request a gather that batches it with whatever else waits (GATHER_DELAY_SECONDS). Raises
    IngestInvalid for a bad message and IngestConflict for a reused external id with another
    body in the same feed. Safe under concurrency: the unique (feed, external_id) decides who
    created it."""
    validate_incoming(item)
    existing = messages_of_feed(submitted_by).filter(external_id=item.external_id).first()
    if existing is not None:
        return _existing_outcome(existing, item)
    try:
        with transaction.atomic():
            message = _new_message(item, submitted_by)
            message.save()
            _request_gather()
    except IntegrityError:
        # Another request created the same external_id between our read and our insert.
        existing = messages_of_feed(submitted_by).get(external_id=item.external_id)
        return _existing_outcome(existing, item)
    return IngestOutcome(message=message, created=True)


@dataclass(frozen=True)
class BulkItemResult:
    index: int
    status: str  # created | duplicate | error
    message: Message | None = None
    error_code: str = ""
    error: str = ""
    field: str | None = None


def messages_ingest_bulk(
    *,
    items: Sequence[IncomingMessage | IngestInvalid],
    submitted_by: AbstractBaseUser | None = None,
    gather: bool = False,
) -> list[BulkItemResult]:
    """Store many messages in one transaction; each item gets its own result (created,
    duplicate, or error with its reason) and one bad item does not reject the others.
    `items` may already contain IngestInvalid for entries that failed parsing upstream.
    New messages are queued for scoring in batches after commit (`gather`: asked for a gather
    instead, as a single message is, so that a trickle of one-message calls is batched)."""
    results: dict[int, BulkItemResult] = {}
    candidates: list[tuple[int, IncomingMessage]] = []
    for index, item in enumerate(items):
        if isinstance(item, IngestInvalid):
            results[index] = BulkItemResult(
                index, "error", error_code=item.code, error=str(item), field=item.field
            )
            continue
        try:
            validate_incoming(item)
        except IngestInvalid as exc:
            results[index] = BulkItemResult(
                index, "error", error_code=exc.code, error=str(exc), field=exc.field
            )
            continue
        candidates.append((index, item))

    existing = {
        message.external_id: message
        for message in messages_of_feed(submitted_by).filter(
            external_id__in=[item.external_id for _, item in candidates]
        )
    }
    to_create: dict[str, tuple[int, IncomingMessage, Message]] = {}
    for index, item in candidates:
        stored = existing.get(item.external_id)
        pending = to_create.get(item.external_id)
        if stored is None and pending is not None:
            stored = pending[2]
        if stored is not None:
            if stored.body_sha256 == body_sha256(item.body):
                results[index] = BulkItemResult(index, "duplicate", message=stored)
            else:
                results[index] = BulkItemResult(
                    index,
                    "error",
                    error_code="conflict",
                    error=f"external_id {item.external_id!r} is already stored with a different body.",
                    field="external_id",
                )
            continue
        to_create[item.external_id] = (index, item, _new_message(item, submitted_by))

    if to_create:
        try:
            with transaction.atomic():
                created = Message.objects.bulk_create([entry[2] for entry in to_create.values()])
                if gather:
                    _request_gather()
                else:
                    _request_scoring([m.pk for m in created])
        except IntegrityError:
            # A concurrent request inserted some of these ids: fall back to one at a time,
            # which resolves each against what is stored now.
            created_ids: list[int] = []
            for index, item, _ in to_create.values():
                try:
                    outcome = message_ingest(item=item, submitted_by=submitted_by)
                    results[index] = BulkItemResult(
                        index, "created" if outcome.created else "duplicate", message=outcome.message
                    )
                    if outcome.created:
                        created_ids.append(outcome.message.pk)
                except IngestConflict as exc:
                    results[index] = BulkItemResult(
                        index, "error", error_code="conflict", error=str(exc), field="external_id"
                    )
            if gather:
                _request_gather()
            else:
                _request_scoring(created_ids)  # still a bulk request: its batches go out on commit
        else:
            for (index, _, _), message in zip(to_create.values(), created, strict=True):
                results[index] = BulkItemResult(index, "created", message=message)
    return [results[i] for i in range(len(items))]
