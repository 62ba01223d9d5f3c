"""Reads of the reviews app: the review queue with its facets, one message's evidence, the
snapshot a decision stores, escalations, and the auditor's decision records."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Substr
from django.utils import timezone

from explanations.models import AttentionDiagnostic, Explanation, ExplanationStatus
from reviews.constants import BODY_PREVIEW_CHARS, EXPLANATION_PREFERENCE, Agreement, ReceivedWithin
from reviews.hashing import HASHED_FIELDS, ChainReport, chain_verify
from reviews.highlight import RuleSpan, Segment, build_segments
from reviews.models import ReviewDecision, ReviewLock, Verdict
from reviews.pagination import PAGE_SIZE, InvalidCursor, decode_cursor, encode_cursor
from scoring.constants import MessageStatus
from scoring.models import ClaimType, Message, ModelVersion, Prediction, RuleMatch

# --- The review queue ----------------------------------------------------------------------------

QUEUE_ORDER = (F("queue_score").desc(nulls_last=True), "received_at", "id")


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
    return (
        Message.objects.filter(status=MessageStatus.IN_REVIEW)
        .filter(_queue_q(filters or QueueFilters(), now))
        .order_by(*QUEUE_ORDER)
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
            "routing_prediction__score",
            "routing_prediction__threshold",
            "routing_prediction__claim_type__name",
            "routing_prediction__claim_type__position",
            "routing_prediction__model_version__name",
            "review_lock__expires_at",
            "review_lock__reviewer__username",
        )
        .annotate(preview=Substr("body", 1, BODY_PREVIEW_CHARS))
    )


@dataclass
class Page:
    """One keyset page: its rows and the cursor of the next page (None on the last page)."""

    items: list[Any]
    next_cursor: str | None


def queue_page(queryset: QuerySet[Message], *, cursor: str | None, size: int = PAGE_SIZE) -> Page:
    """A page of the queue after `cursor` (raises InvalidCursor for a forged one)."""
    if cursor:
        score, received_iso, last_id = decode_cursor(cursor, types=(float, str, int))
        try:
            received = datetime.fromisoformat(received_iso)
        except ValueError as exc:
            raise InvalidCursor("The page cursor is not valid; start again from the first page.") from exc
        same_score = Q(queue_score__isnull=True) if score is None else Q(queue_score=score)
        after = same_score & (Q(received_at__gt=received) | Q(received_at=received, id__gt=last_id))
        if score is not None:
            after |= Q(queue_score__lt=score) | Q(queue_score__isnull=True)
        queryset = queryset.filter(after)
    rows = list(queryset[: size + 1])
    next_cursor = None
    if len(rows) > size:
        rows = rows[:size]
        last = rows[-1]
        next_cursor = encode_cursor([last.queue_score, last.received_at.isoformat(), last.id])
    return Page(rows, next_cursor)


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
            ("no", "Flagged (not QA)", Q(is_qa_sample=False), filters.qa_sample is False),
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
    aggregates: dict[str, Count] = {
        "total": Count("id"),
        "matching": Count("id", filter=_queue_q(filters, now)),
    }
    for facet, values in options.items():
        others = _queue_q(filters, now, skip=facet)
        for index, (_, _, q, _) in enumerate(values):
            aggregates[f"{facet}__{index}"] = Count("id", filter=others & q)
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


# --- One message's evidence -----------------------------------------------------------------------


def explanation_for_review(prediction: Prediction | None) -> Explanation | None:
    """The explanation a reviewer is shown for a prediction: one that passed its faithfulness
    check if there is one, then the first method of EXPLANATION_PREFERENCE (a failed check or
    a failed computation is still shown, with what it means)."""
    if prediction is None:
        return None
    explanations = list(Explanation.objects.filter(prediction=prediction))
    if not explanations:
        return None

    def rank(explanation: Explanation) -> tuple[int, int, int]:
        method_rank = (
            EXPLANATION_PREFERENCE.index(explanation.method)
            if explanation.method in EXPLANATION_PREFERENCE
            else len(EXPLANATION_PREFERENCE)
        )
        return (
            0 if explanation.status == ExplanationStatus.OK else 1,
            0 if explanation.passed else 1,
            method_rank,
        )

    return min(explanations, key=rank)


@dataclass
class AttentionMeta:
    """What the attention panel needs to draw its selectors; the matrices come from JSON."""

    layers: int
    heads: int
    tokens: int
    normalisation: str


@dataclass
class Evidence:
    """Everything the evidence page shows about one message."""

    message: Message
    prediction: Prediction | None
    rule_matches: list[RuleMatch]
    explanation: Explanation | None
    segments: list[Segment]
    attention: AttentionMeta | None
    lock: ReviewLock | None
    decisions: list[ReviewDecision]

    @property
    def latest_decision(self) -> ReviewDecision | None:
        return self.decisions[0] if self.decisions else None


def _rule_spans(rule_matches: list[RuleMatch]) -> list[RuleSpan]:
    return [
        RuleSpan(match.start, match.end, f"{match.rule_code} v{match.rule_set_version}")
        for match in rule_matches
    ]


def message_evidence(message_id: int) -> Evidence:
    """The evidence of one message (raises Message.DoesNotExist)."""
    message = Message.objects.select_related(
        "routing_prediction__model_version", "routing_prediction__claim_type"
    ).get(pk=message_id)
    prediction = message.routing_prediction
    rule_matches = list(RuleMatch.objects.filter(message=message).select_related("claim_type"))
    explanation = explanation_for_review(prediction)
    words = explanation.words if explanation and explanation.status == ExplanationStatus.OK else []
    segments = build_segments(message.body, words, _rule_spans(rule_matches))
    attention = None
    if prediction is not None:
        diagnostic = (
            AttentionDiagnostic.objects.filter(prediction=prediction)
            .only("layers", "heads", "tokens", "normalisation")
            .first()
        )
        if diagnostic is not None:
            attention = AttentionMeta(
                diagnostic.layers, diagnostic.heads, len(diagnostic.tokens), diagnostic.normalisation
            )
    lock = ReviewLock.objects.select_related("reviewer").filter(message=message).first()
    decisions = list(ReviewDecision.objects.filter(message=message).select_related("reviewer", "claim_type"))
    return Evidence(message, prediction, rule_matches, explanation, segments, attention, lock, decisions)


def attention_diagnostic(message_id: int) -> AttentionDiagnostic:
    """The attention diagnostic of the message's routing prediction (raises DoesNotExist)."""
    prediction_id = Message.objects.filter(pk=message_id).values_list("routing_prediction_id", flat=True)
    return AttentionDiagnostic.objects.get(prediction_id=Subquery(prediction_id[:1]))


# --- Snapshot stored with a decision ----------------------------------------------------------------


def _explanation_snapshot(explanation: Explanation | None) -> dict[str, Any] | None:
    if explanation is None:
        return None
    return {
        "id": explanation.pk,
        "method": explanation.method,
        "status": explanation.status,
        "failure_reason": explanation.failure_reason,
        "passed": explanation.passed,
        "pass_rule": explanation.pass_rule,
        "verdict_text": explanation.verdict_text,
        "k": explanation.k,
        "top_words": explanation.top_words,
        "score_full": explanation.score_full,
        "score_without_top": explanation.score_without_top,
        "score_top_only": explanation.score_top_only,
        "comprehensiveness": explanation.comprehensiveness,
        "sufficiency": explanation.sufficiency,
        "random_baseline": explanation.random_baseline,
        "aopc": explanation.aopc,
        "flipped": explanation.flipped,
    }


def decision_snapshot(message: Message) -> dict[str, Any]:
    """What a decision judged, as JSON-safe data: the routing prediction (model version,
    score, threshold, predicted claim type, probabilities), the rule matches, the explanation
    shown with its faithfulness verdict, and the QA-sample flag."""
    prediction = message.routing_prediction
    prediction_data = None
    if prediction is not None:
        prediction_data = {
            "id": prediction.pk,
            "model_version": {"id": prediction.model_version_id, "name": prediction.model_version.name},
            "score": prediction.score,
            "threshold": prediction.threshold,
            "flagged": prediction.flagged,
            "claim_type": prediction.claim_type.code if prediction.claim_type else None,
            "probabilities": prediction.probabilities,
        }
    matches = [
        {
            "rule_code": m.rule_code,
            "rule_set_version": m.rule_set_version,
            "claim_type": m.claim_type.code,
            "start": m.start,
            "end": m.end,
            "text": m.text,
        }
        for m in RuleMatch.objects.filter(message=message).select_related("claim_type")
    ]
    return {
        "message": {
            "id": message.pk,
            "external_id": message.external_id,
            "body_sha256": message.body_sha256,
            "status": message.status,
            "route_reason": message.route_reason,
            "received_at": message.received_at.isoformat(),
        },
        "is_qa_sample": message.is_qa_sample,
        "prediction": prediction_data,
        "rule_matches": matches,
        "explanation": _explanation_snapshot(explanation_for_review(prediction)),
    }


# --- Escalations ------------------------------------------------------------------------------------


def escalated_messages() -> QuerySet[Message]:
    """Messages waiting for a compliance admin, oldest escalation first, with the escalating
    decision's reason and reviewer annotated (no per-row queries)."""
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
            "routing_prediction__claim_type__name",
        )
        .annotate(
            preview=Substr("body", 1, BODY_PREVIEW_CHARS),
            escalation_reason=Subquery(escalation.values("escalation_reason")[:1]),
            escalated_by=Subquery(escalation.values("reviewer__username")[:1]),
        )
        .order_by("escalated_at", "id")
    )


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


def records_list(queryset: QuerySet[ReviewDecision]) -> QuerySet[ReviewDecision]:
    """What one records row (and one CSV line) shows, in the same query."""
    return queryset.select_related(
        "message", "reviewer", "claim_type", "model_version", "model_claim_type", "supersedes"
    ).only(
        *[f for f in HASHED_FIELDS if not f.endswith("_id")],
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
    )


def records_page(queryset: QuerySet[ReviewDecision], *, cursor: str | None, size: int = PAGE_SIZE) -> Page:
    if cursor:
        (last_sequence,) = decode_cursor(cursor, types=(int,))
        queryset = queryset.filter(sequence__lt=last_sequence)
    rows = list(queryset[: size + 1])
    next_cursor = None
    if len(rows) > size:
        rows = rows[:size]
        next_cursor = encode_cursor([rows[-1].sequence])
    return Page(rows, next_cursor)


def decision_detail(decision_id: int) -> ReviewDecision:
    return ReviewDecision.objects.select_related(
        "message", "reviewer", "claim_type", "model_version", "model_claim_type", "supersedes"
    ).get(pk=decision_id)


def audit_chain_report(
    *, progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None
) -> ChainReport:
    """Walk the whole decision chain in sequence order, streaming rows from the database.
    `progress(rows, total)` may wrap the row iterator (the command passes a tqdm bar)."""
    rows: Iterable[Any] = (
        ReviewDecision.objects.order_by("sequence")
        .values("id", "content_hash", *HASHED_FIELDS)
        .iterator(chunk_size=2_000)
    )
    if progress is not None:
        rows = progress(rows, ReviewDecision.objects.count())
    return chain_verify(rows)
