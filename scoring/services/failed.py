"""Failed messages: sending one back to scoring, with an audit record of who, when and why."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from scoring.constants import MessageStatus
from scoring.errors import RetryError
from scoring.models import Message, MessageRetry
from scoring.services.transitions import messages_transition

MAX_REASON_CHARS = 2000


def message_retry(*, message: Message, user: AbstractBaseUser, reason: str) -> MessageRetry:
    """Send a failed message back to scoring: failed -> queued along the state machine, its
    counts (crashes, deferrals, sweeper re-queues) reset, a MessageRetry recording who, when, why
    and what the message was before, and a scoring task published after commit (when the broker
    is down the sweeper publishes it STUCK_AFTER_SECONDS later). Raises RetryError, changing
    nothing, when the reason is empty or the message is not failed (any more: a second click
    finds it queued)."""
    from scoring.services.queueing import _republish

    reason = (reason or "").strip()
    if not reason:
        raise RetryError("Say why the message is retried: the reason is part of the audit record.")
    if len(reason) > MAX_REASON_CHARS:
        raise RetryError(f"The reason is longer than {MAX_REASON_CHARS} characters.")
    with transaction.atomic():
        locked = Message.objects.select_for_update().get(pk=message.pk)
        if locked.status != MessageStatus.FAILED:
            status = locked.get_status_display()
            raise RetryError(f"Only a failed message can be retried; this one is {status}.")
        record = MessageRetry.objects.create(
            message=locked,
            requested_by=user,
            reason=reason,
            previous_status=locked.status,
            previous_reason=locked.status_reason,
            previous_attempts=locked.attempts,
        )
        messages_transition(
            message_ids=[locked.pk],
            from_statuses=[MessageStatus.FAILED],
            to_status=MessageStatus.QUEUED,
            reason=f"retried by {user.get_username()}: {reason}"[:MAX_REASON_CHARS],
            attempts=0,
            explain_attempts=0,
            deferrals=0,
            explain_deferrals=0,
            requeues=0,
            explain_requeues=0,
        )
        transaction.on_commit(lambda: _republish([locked.pk], now=timezone.now()))
    message.refresh_from_db()
    return record
