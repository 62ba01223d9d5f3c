"""Message status transitions: one guarded, atomic place to move a message between states."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from scoring.constants import STATUS_TIMESTAMP_FIELD, TRANSITIONS, MessageStatus
from scoring.errors import InvalidTransition
from scoring.models import Message


def _check_allowed(from_statuses: Iterable[str], to_status: str) -> list[str]:
    sources = list(from_statuses)
    for source in sources:
        if to_status not in TRANSITIONS[MessageStatus(source)]:
            raise InvalidTransition(f"A message cannot move from {source} to {to_status}.")
    return sources


def path_fields(*, from_status: str, path: Sequence[str], now: datetime) -> dict[str, object]:
    """The fields of moving a message from `from_status` along `path`, one step at a time: the
    final status and the timestamp of each status passed through. Raises InvalidTransition at
    the first step the state machine forbids. For writers that update many rows at once (the
    scoring batch), which lock the rows and re-check their status themselves."""
    fields: dict[str, object] = {}
    current = from_status
    for step in path:
        _check_allowed([current], step)
        stamp = STATUS_TIMESTAMP_FIELD.get(step)
        if stamp:
            fields[stamp] = now
        current = step
    fields["status"] = current
    return fields


def messages_transition(
    *, message_ids: Iterable[int], from_statuses: Iterable[str], to_status: str, reason: str = "", **fields
) -> int:
    """Move the messages that are still in one of `from_statuses` to `to_status`, stamping the
    status's timestamp field. Returns how many rows moved: a message already elsewhere (another
    worker got there first) is left alone, which is what makes tasks idempotent."""
    sources = _check_allowed(from_statuses, to_status)
    now = timezone.now()
    updates = {"status": to_status, "updated_at": now, **fields}
    if reason or to_status == MessageStatus.FAILED:
        updates["status_reason"] = reason
    stamp = STATUS_TIMESTAMP_FIELD.get(to_status)
    if stamp:
        updates[stamp] = now
    with transaction.atomic():
        return Message.objects.filter(id__in=list(message_ids), status__in=sources).update(**updates)


def message_transition(
    *,
    message: Message,
    to_status: str,
    from_statuses: Iterable[str] | None = None,
    reason: str = "",
    **fields,
) -> bool:
    """Move one message (from its current status unless `from_statuses` is given). Raises
    InvalidTransition for a move the state machine forbids; returns False when the message was
    no longer in a source status (a concurrent move won)."""
    sources = list(from_statuses) if from_statuses is not None else [message.status]
    moved = messages_transition(
        message_ids=[message.pk], from_statuses=sources, to_status=to_status, reason=reason, **fields
    )
    if moved:
        message.refresh_from_db()
    return bool(moved)
