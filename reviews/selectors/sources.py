"""Reads for showing a message as what it came as: an email (headers, attachments, its thread)
or a chat line (the lines around it in its conversation), on the review page, the record page
and the conversation page. A fixed number of queries per page."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from reviews.highlight import Part
from scoring.constants import MessageStatus
from scoring.models import Conversation, Message

# Chat lines shown before and after the line under review.
LINES_AROUND = 6
# Messages of a thread listed on a message page (the conversation page shows them all).
THREAD_LISTED = 30
CONVERSATION_PAGE = 300


@dataclass(frozen=True)
class Line:
    """One message of a conversation, as a line of the conversation panel."""

    id: int
    sender: str
    received_at: datetime
    subject: str
    text: str
    status: str
    is_current: bool = False
    in_context: bool = False  # one of the earlier lines the current line was scored with
    flagged: bool = False

    @property
    def status_label(self) -> str:
        """The status as every page names it ("In review"), not its stored code."""
        return MessageStatus(self.status).label


@dataclass
class SourceView:
    """What the page shows of a message's source."""

    message: Message
    headers: dict[str, Any]
    notes: list[str]
    attachments: list[dict[str, Any]]
    conversation: Conversation | None
    lines: list[Line] = field(default_factory=list)
    more_before: bool = False
    more_after: bool = False
    context: dict[str, Any] = field(default_factory=dict)  # the chat context that was scored

    @property
    def is_email(self) -> bool:
        return bool(self.headers) and self.message.channel == "email" and "from" in self.headers

    @property
    def is_chat(self) -> bool:
        return self.conversation is not None and self.conversation.kind == Conversation.Kind.CHAT

    @property
    def is_thread(self) -> bool:
        return self.conversation is not None and self.conversation.kind == Conversation.Kind.EMAIL_THREAD


def name_attachment_parts(parts: list[Part], attachments: list[dict[str, Any]] | None) -> list[Part]:
    """Each attachment part named after the attachment whose text it is (by its start offset)."""
    named = {a.get("start"): a.get("name", "") for a in attachments or [] if isinstance(a, dict)}
    out: list[Part] = []
    position = 0
    for part in parts:
        start = position
        position += sum(len(s.text) for s in part.segments)
        out.append(replace(part, name=str(named.get(start, ""))) if part.kind == "attachment" else part)
    return out


_LINE_FIELDS = (
    "id",
    "sender",
    "received_at",
    "subject",
    "body",
    "status",
    "routing_prediction__flagged",
)


def _line(row: dict[str, Any], current: int, context_ids: set[int]) -> Line:
    body = row["body"]
    return Line(
        id=row["id"],
        sender=row["sender"],
        received_at=row["received_at"],
        subject=row["subject"],
        text=body if len(body) <= 600 else body[:600] + "…",
        status=row["status"],
        is_current=row["id"] == current,
        in_context=row["id"] in context_ids,
        flagged=bool(row["routing_prediction__flagged"]),
    )


def message_source(message: Message, *, context: dict[str, Any] | None = None) -> SourceView:
    """The message's headers, attachments and conversation: for a chat line the LINES_AROUND
    lines before and after it, for an email the first THREAD_LISTED messages of its thread.
    `context`: its prediction's context (the chat lines it was scored with)."""
    headers = dict(message.headers or {})
    view = SourceView(
        message=message,
        headers=headers,
        notes=list(headers.get("notes") or []),
        attachments=list(message.attachments or []),
        conversation=None,
        context=dict((context or {}).get("lines") or {}),
    )
    if message.conversation_id is None:
        return view
    view.conversation = Conversation.objects.get(pk=message.conversation_id)
    context_ids = set(view.context.get("message_ids") or [])
    same = Message.objects.filter(conversation_id=message.conversation_id)
    if view.is_chat:
        key = (message.received_at, message.pk)
        before = list(
            same.filter(received_at__lte=message.received_at)
            .exclude(pk=message.pk)
            .order_by("-received_at", "-id")
            .values(*_LINE_FIELDS)[: LINES_AROUND + 1]
        )
        before = [r for r in before if (r["received_at"], r["id"]) < key]
        after = list(
            same.filter(received_at__gte=message.received_at)
            .exclude(pk=message.pk)
            .order_by("received_at", "id")
            .values(*_LINE_FIELDS)[: LINES_AROUND + 1]
        )
        after = [r for r in after if (r["received_at"], r["id"]) > key]
        view.more_before, view.more_after = len(before) > LINES_AROUND, len(after) > LINES_AROUND
        current = {
            f: getattr(message, f) for f in ("id", "sender", "received_at", "subject", "body", "status")
        }
        current["routing_prediction__flagged"] = bool(
            message.routing_prediction_id and message.routing_prediction.flagged
        )
        rows = [*reversed(before[:LINES_AROUND]), current, *after[:LINES_AROUND]]
    else:
        rows = list(same.order_by("received_at", "id").values(*_LINE_FIELDS)[: THREAD_LISTED + 1])
        view.more_after = len(rows) > THREAD_LISTED
        rows = rows[:THREAD_LISTED]
    view.lines = [_line(row, message.pk, context_ids) for row in rows]
    return view


def conversation_messages(
    conversation_id: int, *, limit: int = CONVERSATION_PAGE
) -> tuple[Conversation, list[Line]]:
    """A conversation and its first `limit` messages in time order (raises DoesNotExist)."""
    conversation = Conversation.objects.get(pk=conversation_id)
    rows = Message.objects.filter(conversation_id=conversation_id).order_by("received_at", "id")
    return conversation, [_line(row, -1, set()) for row in rows.values(*_LINE_FIELDS)[:limit]]
