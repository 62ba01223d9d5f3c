"""Reads for the review queue: priority order, filters with their counts, keyset pages, and the
reviewer's current lock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Count, F, Q, QuerySet, Value
from django.db.models.functions import Coalesce, Length, Substr
from django.db.models.lookups import GreaterThan
from django.utils import timezone

from reviews.constants import BODY_PREVIEW_CHARS, ReceivedWithin
from reviews.models import ReviewLock
from reviews.pagination import (
    INVALID_CURSOR,
    PAGE_SIZE,
    InvalidCursor,
    Page,
    cursor_datetime,
    decode_cursor,
    keyset_page,
)
from scoring.constants import MessageStatus
from scoring.models import ClaimType, Message, ModelVersion

# Priority = the routing score, with a message that has none (a pipeline fault) last. The same
# expression is indexed (scoring.Message, "message_review_queue"), so the queue is read in
# index order on every database.
NO_SCORE = -1.0
QUEUE_ORDER = (F("priority").desc(), "received_at", "id")


def queue_priority() -> Coalesce:
    return Coalesce(F("queue_score"), Value(NO_SCORE))


def in_priority_order(queryset: QuerySet[Message]) -> QuerySet[Message]:
    return queryset.alias(priority=queue_priority()).order_by(*QUEUE_ORDER)


@dataclass(frozen=True)
class QueueFilters:
    """The queue's filters; None means "any"."""

    claim_type: ClaimType | None = None
    rule_hit: bool | None = None
    qa_sample: bool | None = None
    model_version: ModelVersion | None = None
    received: str | None = None

    def active(self) -> dict[str, Any]:
        return {name: value for name, value in self.__dict__.items() if value is not None}


def _received_q(bucket: str, now: datetime) -> Q:
    if bucket == ReceivedWithin.OLDER:
        return Q(received_at__lt=now - timedelta(days=ReceivedWithin.DAYS[ReceivedWithin.MONTH]))
    return Q(received_at__gte=now - timedelta(days=ReceivedWithin.DAYS[bucket]))


def _queue_q(filters: QueueFilters, now: datetime, *, skip: str | None = None) -> Q:
    q = Q()
    if filters.claim_type is not None and skip != "claim_type":
        q &= Q(routing_prediction__claim_type_id=filters.claim_type.pk)
    if filters.rule_hit is not None and skip != "rule_hit":
        q &= Q(has_rule_hit=filters.rule_hit)
    if filters.qa_sample is not None and skip != "qa_sample":
        q &= Q(is_qa_sample=filters.qa_sample)
    if filters.model_version is not None and skip != "model_version":
        q &= Q(routing_prediction__model_version_id=filters.model_version.pk)
    if filters.received is not None and skip != "received":
        q &= _received_q(filters.received, now)
    return q


def queue_messages(filters: QueueFilters | None = None, *, now: datetime | None = None) -> QuerySet[Message]:
    """Messages in review matching `filters`, in priority order: routing score (highest first,
    a message without one last), then age (oldest first), then id."""
    now = now or timezone.now()
    return in_priority_order(
        Message.objects.filter(status=MessageStatus.IN_REVIEW).filter(
            _queue_q(filters or QueueFilters(), now)
        )
    )


def queue_list(queryset: QuerySet[Message]) -> QuerySet[Message]:
    """What one queue row shows, fetched in the same query (no per-row queries)."""
    return (
        queryset.select_related(
            "routing_prediction__claim_type", "routing_prediction__model_version", "review_lock__reviewer"
        )
        .only(
            "id",
            "external_id",
            "channel",
            "sender",
            "received_at",
            "queue_score",
            "has_rule_hit",
            "is_qa_sample",
            "route_reason",
            "attachments",  # Message.has_unread_part: the queue marks a part not read
            "routing_prediction__score",
            "routing_prediction__threshold",
            "routing_prediction__flagged",
            "routing_prediction__claim_type__name",
            "routing_prediction__claim_type__position",
            "routing_prediction__model_version__name",
            "review_lock__expires_at",
            "review_lock__reviewer__username",
        )
        .annotate(
            preview=Substr("body", 1, BODY_PREVIEW_CHARS),
            preview_cut=GreaterThan(Length("body"), BODY_PREVIEW_CHARS),
        )
    )


def queue_page(queryset: QuerySet[Message], *, cursor: str | None, size: int = PAGE_SIZE) -> Page:
    """A page of the queue after `cursor` (raises InvalidCursor for a forged one)."""
    if cursor:
        priority, received_iso, last_id = decode_cursor(cursor, types=(float, str, int))
        received = cursor_datetime(received_iso)
        if priority is None:
            raise InvalidCursor(INVALID_CURSOR)
        queryset = queryset.filter(
            Q(priority__lt=priority)
            | Q(priority=priority, received_at__gt=received)
            | Q(priority=priority, received_at=received, id__gt=last_id)
        )
    return keyset_page(
        queryset,
        size=size,
        cursor_of=lambda last: [
            last.queue_score if last.queue_score is not None else NO_SCORE,
            last.received_at.isoformat(),
            last.id,
        ],
    )


@dataclass(frozen=True)
class FacetValue:
    facet: str
    value: str
    label: str
    count: int
    selected: bool


@dataclass
class QueueFacets:
    """Counts per filter value. Each facet counts with the *other* active filters applied, so a
    reviewer sees how many messages each choice would leave."""

    total: int
    matching: int
    facets: dict[str, list[FacetValue]] = field(default_factory=dict)


def queue_facets(filters: QueueFilters, *, now: datetime | None = None) -> QueueFacets:
    """All counts in one aggregate query (plus the two small lookup tables)."""
    now = now or timezone.now()
    claim_types = list(ClaimType.objects.only("id", "code", "name"))
    versions = list(ModelVersion.objects.only("id", "name", "is_active").order_by("-created_at"))
    options: dict[str, list[tuple[str, str, Q, bool]]] = {
        "claim_type": [
            (ct.code, ct.name, Q(routing_prediction__claim_type_id=ct.pk), filters.claim_type == ct)
            for ct in claim_types
        ],
        "rule_hit": [
            ("yes", "Rule hit", Q(has_rule_hit=True), filters.rule_hit is True),
            ("no", "No rule hit", Q(has_rule_hit=False), filters.rule_hit is False),
        ],
        "qa_sample": [
            ("yes", "QA sample", Q(is_qa_sample=True), filters.qa_sample is True),
            ("no", "Not a QA sample", Q(is_qa_sample=False), filters.qa_sample is False),
        ],
        "model_version": [
            (
                str(mv.pk),
                mv.name + (" (active)" if mv.is_active else ""),
                Q(routing_prediction__model_version_id=mv.pk),
                filters.model_version == mv,
            )
            for mv in versions
        ],
        "received": [
            (value, label, _received_q(value, now), filters.received == value)
            for value, label in ReceivedWithin.CHOICES
        ],
    }
    # Count a column the covering partial index holds (received_at is never null), so that
    # PostgreSQL can answer from the index without reading message rows.
    aggregates: dict[str, Count] = {
        "total": Count("received_at"),
        "matching": Count("received_at", filter=_queue_q(filters, now)),
    }
    for facet, values in options.items():
        others = _queue_q(filters, now, skip=facet)
        for index, (_, _, q, _) in enumerate(values):
            aggregates[f"{facet}__{index}"] = Count("received_at", filter=others & q)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # One pass over the partial index: a parallel plan's start-up costs more than it
            # saves at queue sizes (measured with bench_web), and it competes for the CPUs.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        counts = Message.objects.filter(status=MessageStatus.IN_REVIEW).aggregate(**aggregates)
    result = QueueFacets(total=counts["total"], matching=counts["matching"])
    for facet, values in options.items():
        result.facets[facet] = [
            FacetValue(facet, value, label, counts[f"{facet}__{index}"], selected)
            for index, (value, label, _, selected) in enumerate(values)
            # Versions that route nothing in the queue are noise, unless chosen.
            if facet != "model_version" or counts[f"{facet}__{index}"] or selected
        ]
    return result


def lock_held(reviewer: User, *, now: datetime | None = None) -> ReviewLock | None:
    """The reviewer's live lock on a message still in review, if any."""
    now = now or timezone.now()
    return (
        ReviewLock.objects.select_related("message")
        .filter(reviewer=reviewer, expires_at__gt=now, message__status=MessageStatus.IN_REVIEW)
        .order_by("-locked_at")
        .first()
    )
