"""Writes of the monitoring app: the daily roll-ups (the length reference is in length_reference.py).

The roll-up (MessageDayRollup) keeps the drift charts fast at millions of messages. Its rule:
a day's rows are recomputed from the base tables, whole, whenever any message received that
day changed since the last refresh (Message.updated_at, indexed). A message's routing facts
(prediction, route, rule hits, explanations) only ever change together with its updated_at, so
recomputing whole days is always correct, and late work on an old day (a delayed explanation, a
retried message) lands in that day at the next refresh.

`rollup_refresh` runs before every read of rolled-up data (it costs one indexed query when
nothing changed). Its watermark trails the oldest transaction still open on PostgreSQL, minus
WATERMARK_SKEW: a change committed after a refresh read its day was stamped after that
transaction began, so the next refresh still sees it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db import connection, transaction
from django.db.models import Case, Count, F, IntegerField, Max, Min, Q, Sum, Value, When
from django.db.models.functions import Length, TruncDate
from django.utils import timezone

from explanations.models import Explanation, ExplanationStatus
from monitoring import stats
from monitoring.constants import FLAGGED_ROUTES, WATERMARK_SKEW
from monitoring.length_reference import length_reference_ensure
from monitoring.models import DecisionDayRollup, LengthReference, MessageDayRollup, RollupState
from monitoring.timeline import day_start
from reviews.models import DoubleReview, ReviewDecision, Verdict
from scoring.constants import RouteReason
from scoring.models import Message, ModelVersion, RuleMatch

logger = logging.getLogger(__name__)


# --- The daily roll-up -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefreshResult:
    days: int
    rows: int
    full: bool
    decisions: int = 0


def _safe_watermark(now: datetime) -> datetime:
    """Now, or the start of the oldest other open transaction if that is earlier, less the skew
    between application clocks and the database (timestamps are taken in Python)."""
    oldest = now
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT min(xact_start) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
            )
            (started,) = cursor.fetchone()
        if started is not None and started < oldest:
            oldest = started
    return oldest - WATERMARK_SKEW


def _changed_days(since: datetime) -> list[date]:
    return sorted(
        day
        for day in Message.objects.filter(updated_at__gte=since)
        .annotate(day=TruncDate("received_at", tzinfo=UTC))
        .order_by()
        .values_list("day", flat=True)
        .distinct()
    )


def _all_days() -> list[date]:
    bounds = Message.objects.filter(routing_prediction__isnull=False).aggregate(
        first=Min("received_at"), last=Max("received_at")
    )
    if bounds["first"] is None:
        return []
    first, last = bounds["first"].astimezone(UTC).date(), bounds["last"].astimezone(UTC).date()
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def _runs(days: Iterable[date]) -> list[tuple[date, date]]:
    """Contiguous runs of days as (first, last) pairs."""
    runs: list[tuple[date, date]] = []
    for day in sorted(set(days)):
        if runs and runs[-1][1] + timedelta(days=1) == day:
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return runs


def _bin_case(field: str, edges: list[float], condition: Q | None = None) -> list[When]:
    """When-clauses giving bin i for edges[i-1] <= value < edges[i] (as stats.bin_index does).
    With a `condition`, a last clause gives the top bin to the rows that meet it; without one,
    the Case's default must be the top bin."""
    base = condition if condition is not None else Q()
    whens = [When(base & Q(**{f"{field}__lt": edge}), then=Value(i)) for i, edge in enumerate(edges)]
    if condition is not None:
        whens.append(When(condition, then=Value(len(edges))))
    return whens


def _references(version_ids: Iterable[int]) -> dict[int, LengthReference]:
    shas = dict(ModelVersion.objects.filter(pk__in=list(version_ids)).values_list("pk", "corpus_sha256"))
    by_sha = {sha: length_reference_ensure(corpus_sha256=sha) for sha in set(shas.values())}
    return {version: by_sha[sha] for version, sha in shas.items()}


def _recompute_run(first: date, last: date) -> int:
    """Replace the roll-up rows of days first..last with rows computed from the base tables."""
    start, end = day_start(first), day_start(last + timedelta(days=1))
    messages = Message.objects.filter(
        received_at__gte=start, received_at__lt=end, routing_prediction__isnull=False
    ).annotate(
        day=TruncDate("received_at", tzinfo=UTC),
        version=F("routing_prediction__model_version_id"),
        ptype=Case(
            When(route_reason__in=FLAGGED_ROUTES, then=F("routing_prediction__claim_type_id")),
            default=Value(None),
            output_field=IntegerField(),
        ),
    )
    keys = ("day", "version", "route_reason", "ptype")
    versions = set(messages.order_by().values_list("version", flat=True).distinct())
    references = _references(versions)
    rows: dict[tuple, dict] = {}

    def row(key: tuple) -> dict:
        if key not in rows:
            reference = references.get(key[1])
            usable = reference is not None and reference.available
            rows[key] = {
                "messages": 0,
                "longer_than_p99": 0,
                "length_reference": reference,
                "length_histogram": [0] * (len(reference.edges) + 1) if usable else [],
                "score_histogram": [0] * (len(stats.SCORE_EDGES) + 1),
                "rule_hits": {},
                "explanations": {},
            }
        return rows[key]

    # Lengths, binned per version over its corpus reference's edges.
    length_whens: list[When] = []
    longer_whens: list[When] = []
    for version, reference in references.items():
        if reference.available:
            length_whens += _bin_case("chars", reference.edges, Q(version=version))
            longer_whens.append(When(Q(version=version) & Q(chars__gt=reference.p99_chars), then=Value(1)))
    length_rows = (
        messages.annotate(
            chars=Length("body"),
            lbin=Case(*length_whens, default=Value(-1), output_field=IntegerField()),
            longer=Case(*longer_whens, default=Value(0), output_field=IntegerField()),
        )
        .values(*keys, "lbin")
        .annotate(n=Count("id"), n_longer=Sum("longer"))
    )
    for item in length_rows:
        target = row(tuple(item[k] for k in keys))
        target["messages"] += item["n"]
        target["longer_than_p99"] += item["n_longer"] or 0
        if item["lbin"] >= 0:
            target["length_histogram"][item["lbin"]] += item["n"]

    score_rows = (
        messages.annotate(
            sbin=Case(
                *_bin_case("routing_prediction__score", list(stats.SCORE_EDGES)),
                default=Value(len(stats.SCORE_EDGES)),
                output_field=IntegerField(),
            )
        )
        .values(*keys, "sbin")
        .annotate(n=Count("id"))
    )
    for item in score_rows:
        row(tuple(item[k] for k in keys))["score_histogram"][item["sbin"]] += item["n"]

    prefix = "message__"
    rule_rows = (
        RuleMatch.objects.filter(
            message__received_at__gte=start,
            message__received_at__lt=end,
            message__routing_prediction__isnull=False,
        )
        .annotate(
            day=TruncDate(f"{prefix}received_at", tzinfo=UTC),
            version=F(f"{prefix}routing_prediction__model_version_id"),
            route_reason_=F(f"{prefix}route_reason"),
            ptype=Case(
                When(
                    message__route_reason__in=FLAGGED_ROUTES,
                    then=F(f"{prefix}routing_prediction__claim_type_id"),
                ),
                default=Value(None),
                output_field=IntegerField(),
            ),
            rule_type=F("claim_type__code"),
        )
        .values("day", "version", "route_reason_", "ptype", "rule_type")
        .annotate(n=Count("message_id", distinct=True))
    )
    for item in rule_rows:
        key = (item["day"], item["version"], item["route_reason_"], item["ptype"])
        hits = row(key)["rule_hits"]
        hits[item["rule_type"]] = hits.get(item["rule_type"], 0) + item["n"]

    explanation_rows = (
        Explanation.objects.filter(
            message__received_at__gte=start,
            message__received_at__lt=end,
            prediction_id=F(f"{prefix}routing_prediction_id"),
        )
        .annotate(
            day=TruncDate(f"{prefix}received_at", tzinfo=UTC),
            version=F("prediction__model_version_id"),
            route_reason_=F(f"{prefix}route_reason"),
            ptype=Case(
                When(message__route_reason__in=FLAGGED_ROUTES, then=F("prediction__claim_type_id")),
                default=Value(None),
                output_field=IntegerField(),
            ),
        )
        .values("day", "version", "route_reason_", "ptype", "method")
        .annotate(
            computed=Count("id", filter=Q(status=ExplanationStatus.OK)),
            passed=Count("id", filter=Q(status=ExplanationStatus.OK, passed=True)),
            failed=Count("id", filter=Q(status=ExplanationStatus.FAILED)),
        )
    )
    for item in explanation_rows:
        key = (item["day"], item["version"], item["route_reason_"], item["ptype"])
        outcome = row(key)["explanations"].setdefault(
            item["method"], {"computed": 0, "passed": 0, "failed": 0}
        )
        for field in ("computed", "passed", "failed"):
            outcome[field] += item[field]

    MessageDayRollup.objects.filter(day__gte=first, day__lte=last).delete()
    MessageDayRollup.objects.bulk_create(
        [
            MessageDayRollup(
                day=key[0],
                model_version_id=key[1],
                route_reason=key[2],
                predicted_claim_type_id=key[3],
                **values,
            )
            for key, values in rows.items()
        ],
        batch_size=1000,
    )
    return len(rows)


# --- The decision roll-up --------------------------------------------------------------------------

_DECISION_FIELDS = (
    "model_version_id",
    "model_flagged",
    "is_qa_sample",
    "verdict",
    "claim_type_id",
    "model_claim_type_id",
)
COUNTED_VERDICTS = (Verdict.CLAIM, Verdict.NO_CLAIM)
# The message's route reason: a message sent to review for a part not read is a stratum of its
# own in the recall estimate (monitoring.stats.recall_estimate). A decided message is not routed
# again, so its route reason is the one it was reviewed under.
_ROUTE = "message__route_reason"


def _decision_key(row: dict) -> tuple | None:
    """The roll-up key a decision counts under, or None when it does not count (an escalation,
    or no model prediction to compare with)."""
    if (
        row["verdict"] not in COUNTED_VERDICTS
        or row["model_flagged"] is None
        or row["model_version_id"] is None
    ):
        return None
    return (
        row["created_at"].astimezone(UTC).date(),
        *(row[name] for name in _DECISION_FIELDS),
        row[_ROUTE] == RouteReason.UNREAD_PART,
    )


def _refresh_decisions(after_sequence: int) -> tuple[int, int]:
    """Fold decisions numbered after `after_sequence` into the decision roll-up. Decisions are
    append-only and numbered in commit order (the chain lock), so nothing below the watermark
    can still appear. A decision counts on its day; one that supersedes another takes the
    other's count away from the other's day. Returns (decisions folded, last sequence)."""
    fields = ("id", "sequence", "created_at", "supersedes_id", *_DECISION_FIELDS, _ROUTE)
    new = list(
        ReviewDecision.objects.filter(sequence__gt=after_sequence).order_by("sequence").values(*fields)
    )
    if not new:
        return 0, after_sequence
    # Blind double reviews: a second review does not count, and a compliance admin's final
    # decision takes the first decision's place (monitoring.selectors.decisions).
    new_ids = [row["id"] for row in new]
    second_ids: set[int] = set()
    replaces: dict[int, int] = {}  # final decision id -> the first decision it replaces
    for second_id, final_id, first_id in DoubleReview.objects.filter(
        Q(second_decision_id__in=new_ids) | Q(final_decision_id__in=new_ids)
    ).values_list("second_decision_id", "final_decision_id", "first_decision_id"):
        second_ids.add(second_id)
        if final_id is not None:
            replaces[final_id] = first_id
    superseded_ids = [row["supersedes_id"] for row in new if row["supersedes_id"] is not None]
    superseded = {
        row["id"]: row
        for row in ReviewDecision.objects.filter(pk__in=[*superseded_ids, *replaces.values()]).values(
            "id", "created_at", *_DECISION_FIELDS, _ROUTE
        )
    }
    deltas: dict[tuple, int] = defaultdict(int)
    for row in new:
        key = _decision_key(row) if row["id"] not in second_ids else None
        if key is not None:
            deltas[key] += 1
        for old_id in (row["supersedes_id"], replaces.get(row["id"])):
            if old_id is not None:
                old_key = _decision_key(superseded[old_id])
                if old_key is not None:
                    deltas[old_key] -= 1
    days = {key[0] for key in deltas}
    existing = {
        (
            r.day,
            r.model_version_id,
            r.model_flagged,
            r.is_qa_sample,
            r.verdict,
            r.claim_type_id,
            r.model_claim_type_id,
            r.unread_part,
        ): r
        for r in DecisionDayRollup.objects.filter(day__in=days)
    }
    changed, created, emptied = [], [], []
    for key, delta in deltas.items():
        if delta == 0:
            continue
        row = existing.get(key)
        if row is None:
            created.append(
                DecisionDayRollup(
                    day=key[0],
                    model_version_id=key[1],
                    model_flagged=key[2],
                    is_qa_sample=key[3],
                    verdict=key[4],
                    claim_type_id=key[5],
                    model_claim_type_id=key[6],
                    unread_part=key[7],
                    decisions=delta,
                )
            )
            continue
        row.decisions += delta
        (emptied if row.decisions == 0 else changed).append(row)
    DecisionDayRollup.objects.bulk_create(created, batch_size=1000)
    DecisionDayRollup.objects.bulk_update(changed, ["decisions"], batch_size=1000)
    DecisionDayRollup.objects.filter(pk__in=[row.pk for row in emptied]).delete()
    return len(new), new[-1]["sequence"]


def rollup_refresh(*, full: bool = False, now: datetime | None = None) -> RefreshResult:
    """Bring both roll-ups up to date: recompute every day that has a message changed since the
    last refresh (all days the first time, or with `full`), and fold in the decisions recorded
    since (all of them with `full`). Refreshes are serialised by a row lock, so concurrent
    readers wait for one refresh instead of repeating it."""
    now = now or timezone.now()
    RollupState.objects.get_or_create(pk=1)
    with transaction.atomic():
        state = RollupState.objects.select_for_update().get(pk=1)
        watermark = _safe_watermark(now)
        full = full or state.watermark is None
        days = _all_days() if full else _changed_days(state.watermark)
        if full:
            MessageDayRollup.objects.all().delete()
            DecisionDayRollup.objects.all().delete()
            LengthReference.objects.filter(available=False).delete()  # look for the corpus again
            state.decision_sequence = 0
        rows = sum(_recompute_run(first, last) for first, last in _runs(days))
        decisions, state.decision_sequence = _refresh_decisions(state.decision_sequence)
        state.watermark = watermark
        state.refreshed_at = now
        state.days_recomputed = len(days)
        state.save()
    if days or decisions:
        logger.info(
            "monitoring roll-up: %d day(s) recomputed, %d row(s); %d decision(s) folded in",
            len(days),
            rows,
            decisions,
        )
    return RefreshResult(days=len(days), rows=rows, full=full, decisions=decisions)
