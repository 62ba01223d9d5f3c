"""Queue health: what waits (per status, with the age of the oldest message since it was
received), what failed for good (scoring refused it, or it crashed its worker alone MAX_ATTEMPTS
times: a compliance admin retries it on the failed-messages page) and the messages that reached
review with a failed explanation, live review locks, the model workers' devices (a worker that
cannot use its device consumes nothing: scoring.worker), and decisions per reviewer per day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.contrib.auth.models import User
from django.db.models import Count, Max, Min
from django.db.models.functions import TruncDate
from django.urls import reverse
from django.utils import timezone

from monitoring.constants import QUEUE_DAYS, WAITING_STATUSES
from reviews.models import ReviewDecision, ReviewLock
from scoring.constants import MessageStatus
from scoring.models import Message
from scoring.selectors import worker_devices


def queue_health(*, now: datetime | None = None, days: int = QUEUE_DAYS) -> dict:
    now = now or timezone.now()
    labels = dict(MessageStatus.choices)
    found = {
        row["status"]: row
        for row in Message.objects.filter(status__in=WAITING_STATUSES)
        .values("status")
        .annotate(n=Count("id"), oldest=Min("received_at"))
    }
    waiting = []
    for status in WAITING_STATUSES:
        row = found.get(status)
        oldest = row["oldest"] if row else None
        waiting.append(
            {
                "status": status,
                "label": labels[status],
                "messages": row["n"] if row else 0,
                "oldest_received_at": oldest.isoformat() if oldest else None,
                "oldest_age_seconds": max(0.0, (now - oldest).total_seconds()) if oldest else None,
            }
        )
    failed = Message.objects.filter(status=MessageStatus.FAILED).aggregate(
        n=Count("id"), oldest=Min("failed_at"), latest=Max("failed_at")
    )
    since = (now - timedelta(days=days)).astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    rows = list(
        ReviewDecision.objects.filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("reviewer_id", "day")
        .annotate(n=Count("id"))
        .order_by("day", "reviewer_id")
    )
    names = dict(User.objects.filter(pk__in={r["reviewer_id"] for r in rows}).values_list("pk", "username"))
    return {
        "now": now.isoformat(),
        "waiting": waiting,
        "failed": {
            "messages": failed["n"],
            "oldest_failed_at": failed["oldest"].isoformat() if failed["oldest"] else None,
            "latest_failed_at": failed["latest"].isoformat() if failed["latest"] else None,
            "url": reverse("monitoring:failed"),
        },
        "explanation_failed_in_review": Message.objects.filter(
            status=MessageStatus.IN_REVIEW, status_reason__startswith="explanation failed"
        ).count(),
        "live_locks": ReviewLock.objects.filter(expires_at__gt=now).count(),
        "workers": worker_devices(now=now),
        "days": days,
        "since": since.date().isoformat(),
        "decisions_per_reviewer_per_day": [
            {
                "reviewer": names.get(r["reviewer_id"], str(r["reviewer_id"])),
                "day": r["day"].isoformat(),
                "n": r["n"],
            }
            for r in rows
        ],
    }
