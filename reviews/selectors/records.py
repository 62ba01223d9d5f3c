"""Reads for compliance admins and auditors: escalations, decision records with their search and
filters, and one record (the audit chain check is in reviews.selectors.audit)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db.models import F, OuterRef, Q, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Substr
from django.utils import timezone

from reviews.constants import BODY_PREVIEW_CHARS, Agreement
from reviews.hashing import HASHED_FIELDS
from reviews.models import DoubleReview, ReviewDecision, Verdict
from reviews.pagination import (
    PAGE_SIZE,
    Page,
    cursor_datetime,
    decode_cursor,
    keyset_page,
)
from scoring.constants import MessageStatus
from scoring.models import ClaimType, Message, ModelVersion, Prediction


def _pair_fields(prefix: str) -> dict[str, F]:
    """first_/second_ verdict, type (name), by (username) and note of a blind double review, as
    expressions from the row that `prefix` leads to the DoubleReview from."""
    return {
        f"{side}_{name}": F(f"{prefix}{side}_decision__{path}")
        for side in ("first", "second")
        for name, path in (
            ("verdict", "verdict"),
            ("type", "claim_type__name"),
            ("by", "reviewer__username"),
            ("note", "note"),
        )
    }


def double_review_pair(message_id: int) -> dict[str, Any] | None:
    """A message's blind double review for a compliance admin's page: outcome, both decisions
    (see `_pair_fields`) and the final decision's sequence; None when it was not drawn."""
    return (
        DoubleReview.objects.filter(message_id=message_id)
        .values("outcome", "final_decision__sequence", "second_decision_id", **_pair_fields(""))
        .first()
    )


def escalated_messages() -> QuerySet[Message]:
    """Messages waiting for a compliance admin, oldest escalation first, with the escalating
    decision's reason and reviewer annotated, and for a blind double review whose reviewers
    disagreed both decisions (no per-row queries)."""
    escalation = ReviewDecision.objects.filter(message=OuterRef("pk"), verdict=Verdict.ESCALATE).order_by(
        "-sequence"
    )
    return (
        Message.objects.filter(status=MessageStatus.ESCALATED)
        .select_related("routing_prediction__claim_type")
        .only(
            "id",
            "external_id",
            "received_at",
            "escalated_at",
            "queue_score",
            "routing_prediction__score",
            "routing_prediction__flagged",
            "routing_prediction__claim_type__name",
        )
        .annotate(
            preview=Substr("body", 1, BODY_PREVIEW_CHARS),
            escalation_reason=Subquery(escalation.values("escalation_reason")[:1]),
            escalated_by=Subquery(escalation.values("reviewer__username")[:1]),
            # A blind double review that ended here: both decisions, side by side.
            double_outcome=F("double_review__outcome"),
            **_pair_fields("double_review__"),
        )
        .order_by("escalated_at", "id")
    )


def escalations_page(queryset: QuerySet[Message], *, cursor: str | None, size: int = PAGE_SIZE) -> Page:
    """One keyset page of `escalated_messages()` (oldest escalation first)."""
    if cursor:
        escalated_iso, last_id = decode_cursor(cursor, types=(str, int))
        escalated_at = cursor_datetime(escalated_iso)
        queryset = queryset.filter(
            Q(escalated_at__gt=escalated_at) | Q(escalated_at=escalated_at, id__gt=last_id)
        )
    return keyset_page(queryset, size=size, cursor_of=lambda last: [last.escalated_at.isoformat(), last.id])


# --- Decision records (auditor) -----------------------------------------------------------------------


@dataclass(frozen=True)
class RecordFilters:
    """The records page's search and filters; None or "" means "any"."""

    q: str = ""
    reviewer: User | None = None
    date_from: date | None = None
    date_to: date | None = None
    claim_type: ClaimType | None = None
    agreement: str | None = None
    model_version: ModelVersion | None = None
    verdict: str | None = None


def _day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=timezone.get_current_timezone())


def decision_records(filters: RecordFilters | None = None) -> QuerySet[ReviewDecision]:
    """Decision records matching the search and filters, newest first (by chain sequence).
    The search matches an external id exactly, or text in the message body, the note or a
    reason (case-insensitive)."""
    filters = filters or RecordFilters()
    qs = ReviewDecision.objects.all()
    if filters.q:
        qs = qs.filter(
            Q(message__external_id=filters.q)
            | Q(message__body__icontains=filters.q)
            | Q(note__icontains=filters.q)
            | Q(escalation_reason__icontains=filters.q)
            | Q(supersede_reason__icontains=filters.q)
        )
    if filters.reviewer is not None:
        qs = qs.filter(reviewer=filters.reviewer)
    if filters.date_from is not None:
        qs = qs.filter(created_at__gte=_day_start(filters.date_from))
    if filters.date_to is not None:
        qs = qs.filter(created_at__lt=_day_start(filters.date_to) + timedelta(days=1))
    if filters.claim_type is not None:
        qs = qs.filter(claim_type=filters.claim_type)
    if filters.agreement == Agreement.AGREE:
        qs = qs.filter(agrees_with_model=True)
    elif filters.agreement == Agreement.DISAGREE:
        qs = qs.filter(agrees_with_model=False)
    elif filters.agreement == Agreement.ESCALATED:
        qs = qs.filter(verdict=Verdict.ESCALATE)
    if filters.model_version is not None:
        qs = qs.filter(model_version=filters.model_version)
    if filters.verdict:
        qs = qs.filter(verdict=filters.verdict)
    return qs.order_by("-sequence")


def records_list(
    queryset: QuerySet[ReviewDecision], *, with_snapshot: bool = False
) -> QuerySet[ReviewDecision]:
    """What one records row shows (with `with_snapshot`, what one CSV line shows), in the same
    query. The list page leaves the snapshot JSON, the widest column, in the database, and reads
    from it only the names of the moment of the decision (`reviewer_then`, `claim_type_name_then`:
    None for records written before snapshots kept them)."""
    fields = [f for f in HASHED_FIELDS if not f.endswith("_id") and (with_snapshot or f != "snapshot")]
    extra: list[str] = []
    if with_snapshot:  # the CSV also carries the subject, the thread and the chat conversation
        queryset = queryset.select_related("message__conversation")
        extra = ["message__subject", "message__conversation_id", "message__conversation__kind"]
    return (
        queryset.annotate(
            reviewer_then=KT("snapshot__decision__reviewer"),
            claim_type_name_then=KT("snapshot__decision__claim_type__name"),
        )
        .select_related(
            "message", "reviewer", "claim_type", "model_version", "model_claim_type", "supersedes"
        )
        .only(
            *fields,
            "id",
            "content_hash",
            "message__external_id",
            "reviewer__username",
            "claim_type__code",
            "claim_type__name",
            "model_version__name",
            "model_claim_type__code",
            "supersedes__sequence",
            "message_id",
            "reviewer_id",
            "claim_type_id",
            "model_version_id",
            "model_claim_type_id",
            "supersedes_id",
            *extra,
        )
    )


def records_page(queryset: QuerySet[ReviewDecision], *, cursor: str | None, size: int = PAGE_SIZE) -> Page:
    if cursor:
        (last_sequence,) = decode_cursor(cursor, types=(int,))
        queryset = queryset.filter(sequence__lt=last_sequence)
    return keyset_page(queryset, size=size, cursor_of=lambda last: [last.sequence])


def decision_detail(decision_id: int) -> ReviewDecision:
    return ReviewDecision.objects.select_related(
        "message", "reviewer", "claim_type", "model_version", "model_claim_type", "supersedes"
    ).get(pk=decision_id)


def decision_superseded_by(decision: ReviewDecision) -> ReviewDecision | None:
    """The correction that superseded `decision`, if any (id and sequence only)."""
    return ReviewDecision.objects.filter(supersedes=decision).only("id", "sequence").first()


def decision_history(decision: ReviewDecision) -> QuerySet[ReviewDecision]:
    """Every decision recorded on `decision`'s message, with the reviewer's name."""
    return (
        ReviewDecision.objects.filter(message_id=decision.message_id)
        .select_related("reviewer")
        .only("id", "sequence", "verdict", "created_at", "reviewer__username", "supersedes_id", "snapshot")
    )


@dataclass(frozen=True)
class JudgedReading:
    """How the model read the message a decision judged: the message parts, the window scores and
    the context (a chat line's earlier lines, quoted history already seen). `recorded`: taken from
    the decision's snapshot; False for a record written before snapshots kept them, whose reading
    comes from the prediction stored now (and cannot be shown to be what the reviewer saw)."""

    segments: list[dict[str, Any]]
    window_scores: list[dict[str, Any]]
    context: dict[str, Any]
    recorded: bool


def decision_reading(decision: ReviewDecision) -> JudgedReading:
    """The reading of `decision`'s prediction: from its snapshot, else the stored prediction."""
    shown = (decision.snapshot or {}).get("prediction") or {}
    if "context" in shown:
        return JudgedReading(
            list(shown.get("segments") or []),
            list(shown.get("window_scores") or []),
            dict(shown.get("context") or {}),
            recorded=True,
        )
    row = (
        Prediction.objects.filter(pk=shown["id"]).values("segments", "window_scores", "context").first()
        if isinstance(shown.get("id"), int)
        else None
    )
    if row is None:
        return JudgedReading([], [], {}, recorded=False)
    return JudgedReading(
        list(row["segments"] or []), list(row["window_scores"] or []), dict(row["context"] or {}), False
    )
