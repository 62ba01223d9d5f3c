"""Reads for the Reviewers page: how consistently the reviewers decide, from blind double reviews.

Definitions (the page states them too):
- A reviewer's **decisions** are their first-level decisions recorded in the window (a compliance
  admin's second-level decisions are not a reviewer's). A decision's **claim type** is the
  reviewer's type for a claim, else the model's predicted type when it flagged the message, else
  none (counted under "all types" only).
- **Double-reviewed share**: the share of those decisions that are one half of a blind double review
  (drawn as the first review, or taken as the second).
- **Pairs**: double reviews whose second review was recorded in the window with a verdict (claim or
  not a claim) on both sides. A pair's claim type is the one it was drawn for, else the second
  review's. A label is the claim type for a claim and "no_claim" otherwise.
- **Percent agreement and Cohen's kappa** of a reviewer: over the pairs they took part in, their
  label against the other reviewer's (monitoring.agreement states the interval). "All reviewers":
  first review against second.
- **Agreement with final decisions**: over pairs that a compliance admin decided after an escalation
  (the final decision), the share of the reviewer's labels equal to the final one (Wilson interval).
- **Median time to decide**: from claiming the message to recording the decision (DecisionTiming).
- **Kappa over time**: the pairs of each period (by second review), all reviewers. The alert rule of
  the disagreement charts (monitoring.stats.ALERT_RULE) is applied to the rate at which the two
  reviews disagree, against a reference made of all earlier periods in the window.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db.models import Case, CharField, Count, F, Q, QuerySet, When
from django.utils import timezone

from monitoring import stats
from monitoring.agreement import Kappa, cohen_kappa, percent_agreement
from monitoring.constants import ALL, NO_CLAIM
from monitoring.timeline import period_end, period_start
from reviews.models import DecisionTiming, DoubleReview, DoubleReviewOutcome, ReviewDecision, Verdict
from scoring.models import ClaimType

ALL_REVIEWERS = "All reviewers"


@dataclass
class ReviewerRow:
    """One line of the Reviewers table: one reviewer (or all) and one claim type (or all)."""

    reviewer: str
    claim_type: str
    claim_type_name: str
    decisions: int = 0
    double_reviewed: stats.Rate = field(default_factory=lambda: stats.rate(0, 0))
    agreement: stats.Rate = field(default_factory=lambda: stats.rate(0, 0))
    kappa: Kappa = field(default_factory=lambda: cohen_kappa([]))
    final_agreement: stats.Rate = field(default_factory=lambda: stats.rate(0, 0))
    median_seconds: float | None = None
    timed: int = 0

    def as_dict(self) -> dict:
        return {
            "reviewer": self.reviewer,
            "claim_type": self.claim_type,
            "claim_type_name": self.claim_type_name,
            "decisions": self.decisions,
            "double_reviewed": self.double_reviewed.as_dict(),
            "agreement": self.agreement.as_dict(),
            "kappa": self.kappa.as_dict(),
            "final_agreement": self.final_agreement.as_dict(),
            "median_seconds": self.median_seconds,
            "timed": self.timed,
        }


@dataclass(frozen=True)
class Pair:
    """A completed blind double review, as the statistics need it."""

    first_reviewer: str  # usernames
    second_reviewer: str
    first: str
    second: str
    claim_type: str
    final: str | None
    second_at: datetime


@dataclass
class ReviewersReport:
    since: datetime
    until: datetime
    period: str
    rows: list[ReviewerRow]
    timeline: list[dict]
    pending: int
    awaiting_admin: int

    def as_dict(self) -> dict:
        return {
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "period": self.period,
            "rows": [row.as_dict() for row in self.rows],
            "timeline": self.timeline,
            "pending": self.pending,
            "awaiting_admin": self.awaiting_admin,
        }


def label_of(verdict: str | None, claim_code: str | None) -> str | None:
    """A decision's label: its claim type for a claim, "no_claim" otherwise, None for an escalation."""
    if verdict == Verdict.CLAIM:
        return claim_code
    if verdict == Verdict.NO_CLAIM:
        return NO_CLAIM
    return None


def _about_type(prefix: str = "") -> Case:
    """The claim type a decision is about (module docstring), as a database expression."""
    return Case(
        When(**{f"{prefix}verdict": Verdict.CLAIM}, then=F(f"{prefix}claim_type__code")),
        When(**{f"{prefix}model_flagged": True}, then=F(f"{prefix}model_claim_type__code")),
        default=None,
        output_field=CharField(),
    )


def decision_counts(since: datetime, until: datetime) -> QuerySet:
    """Per reviewer and claim type: decisions, and how many are half of a double review."""
    return (
        ReviewDecision.objects.filter(is_second_level=False, created_at__gte=since, created_at__lt=until)
        .annotate(about=_about_type())
        .values("reviewer__username", "about")
        .annotate(
            n=Count("id"),
            doubled=Count(
                "id",
                filter=Q(double_review_as_first__isnull=False) | Q(double_review_as_second__isnull=False),
            ),
        )
        .order_by()
    )


def completed_pairs(since: datetime, until: datetime) -> list[Pair]:
    """The pairs of the window (module docstring), oldest first."""
    rows = (
        DoubleReview.objects.filter(
            second_at__gte=since,
            second_at__lt=until,
            outcome__in=[DoubleReviewOutcome.AGREED, DoubleReviewOutcome.DISAGREED],
        )
        .order_by("second_at", "id")
        .values(
            "second_at",
            "claim_type__code",
            first_by=F("first_decision__reviewer__username"),
            first_verdict=F("first_decision__verdict"),
            first_code=F("first_decision__claim_type__code"),
            second_by=F("second_decision__reviewer__username"),
            second_verdict=F("second_decision__verdict"),
            second_code=F("second_decision__claim_type__code"),
            final_verdict=F("final_decision__verdict"),
            final_code=F("final_decision__claim_type__code"),
        )
    )
    pairs = []
    for row in rows:
        first = label_of(row["first_verdict"], row["first_code"])
        second = label_of(row["second_verdict"], row["second_code"])
        if first is None or second is None:
            continue
        pairs.append(
            Pair(
                first_reviewer=row["first_by"],
                second_reviewer=row["second_by"],
                first=first,
                second=second,
                claim_type=row["claim_type__code"] or row["second_code"] or ALL,
                final=label_of(row["final_verdict"], row["final_code"]),
                second_at=row["second_at"],
            )
        )
    return pairs


def _timings(since: datetime, until: datetime) -> dict[tuple[str, str], list[float]]:
    seconds: dict[tuple[str, str], list[float]] = defaultdict(list)
    rows = (
        DecisionTiming.objects.filter(decision__created_at__gte=since, decision__created_at__lt=until)
        .annotate(about=_about_type("decision__"))
        .values_list("decision__reviewer__username", "about", "seconds")
    )
    for reviewer, about, value in rows:
        for key in ((reviewer, ALL), (reviewer, about), (ALL_REVIEWERS, ALL), (ALL_REVIEWERS, about)):
            if key[1] is not None:
                seconds[key].append(value)
    return seconds


def _oriented(pairs: Iterable[Pair], reviewer: str) -> list[tuple[str, str, str | None]]:
    """(reviewer's label, the other's label, final label) of the pairs `reviewer` took part in."""
    out = []
    for pair in pairs:
        if reviewer == ALL_REVIEWERS or pair.first_reviewer == reviewer:
            out.append((pair.first, pair.second, pair.final))
        elif pair.second_reviewer == reviewer:
            out.append((pair.second, pair.first, pair.final))
    return out


def _final_agreement(oriented: list[tuple[str, str, str | None]], reviewer: str) -> stats.Rate:
    finals = [(mine, other, final) for mine, other, final in oriented if final is not None]
    if reviewer == ALL_REVIEWERS:  # both reviews of each pair count
        labels = [(label, final) for mine, other, final in finals for label in (mine, other)]
    else:
        labels = [(mine, final) for mine, _, final in finals]
    return stats.rate(sum(label == final for label, final in labels), len(labels))


def reviewer_rows(since: datetime, until: datetime, pairs: list[Pair]) -> list[ReviewerRow]:
    """Every reviewer (and all reviewers) by every claim type with data (and all types)."""
    names = {ct.code: ct.name for ct in ClaimType.objects.order_by("position")}
    order = list(names)
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in decision_counts(since, until):
        for key in (
            (row["reviewer__username"], ALL),
            (row["reviewer__username"], row["about"]),
            (ALL_REVIEWERS, ALL),
            (ALL_REVIEWERS, row["about"]),
        ):
            if key[1] is not None:
                counts[key][0] += row["n"]
                counts[key][1] += row["doubled"]
    timings = _timings(since, until)
    reviewers = sorted(
        {name for name, _ in counts} - {ALL_REVIEWERS}
        | {p.first_reviewer for p in pairs}
        | {p.second_reviewer for p in pairs}
    )
    rows = []
    for reviewer in [ALL_REVIEWERS, *reviewers]:
        types = {ct for who, ct in counts if who == reviewer} | {
            p.claim_type for p in pairs if reviewer in (ALL_REVIEWERS, p.first_reviewer, p.second_reviewer)
        }
        for code in [ALL, *sorted(types - {ALL}, key=lambda c: order.index(c) if c in order else len(order))]:
            chosen = [p for p in pairs if code == ALL or p.claim_type == code]
            oriented = _oriented(chosen, reviewer)
            n, doubled = counts.get((reviewer, code), (0, 0))
            seconds = timings.get((reviewer, code), [])
            rows.append(
                ReviewerRow(
                    reviewer=reviewer,
                    claim_type=code,
                    claim_type_name="All types" if code == ALL else names.get(code, code),
                    decisions=n,
                    double_reviewed=stats.rate(doubled, n),
                    agreement=percent_agreement((mine, other) for mine, other, _ in oriented),
                    kappa=cohen_kappa((mine, other) for mine, other, _ in oriented),
                    final_agreement=_final_agreement(oriented, reviewer),
                    median_seconds=statistics.median(seconds) if seconds else None,
                    timed=len(seconds),
                )
            )
    return rows


def kappa_timeline(pairs: list[Pair], *, period: str, since: date, until: date) -> list[dict]:
    """Kappa of all reviewers per period, with the disagreement alert (module docstring)."""
    by_period: dict[date, list[Pair]] = defaultdict(list)
    for pair in pairs:
        by_period[period_start(pair.second_at.date(), period)].append(pair)
    out = []
    start = period_start(since, period)
    reference_n = reference_disagree = 0
    while start <= until:
        chosen = by_period.get(start, [])
        n = len(chosen)
        disagree = sum(p.first != p.second for p in chosen)
        check = stats.alert_check(disagree, n, reference_disagree, reference_n)
        out.append(
            {
                "start": start.isoformat(),
                "end": period_end(start, period).isoformat(),
                "n": n,
                "disagreements": disagree,
                "kappa": cohen_kappa((p.first, p.second) for p in chosen).as_dict(),
                "agreement": percent_agreement((p.first, p.second) for p in chosen).as_dict(),
                "reference": {"n": reference_n, "disagreements": reference_disagree},
                "alert": check.fires,
                "alert_reason": check.reason,
            }
        )
        reference_n += n
        reference_disagree += disagree
        start = period_end(start, period)
    return out


def reviewers_report(*, days: int, period: str, now: datetime | None = None) -> ReviewersReport:
    """Everything the Reviewers page shows for the last `days` days."""
    until = now or timezone.now()
    since = until - timedelta(days=days)
    pairs = completed_pairs(since, until)
    return ReviewersReport(
        since=since,
        until=until,
        period=period,
        rows=reviewer_rows(since, until, pairs),
        timeline=kappa_timeline(pairs, period=period, since=since.date(), until=until.date()),
        pending=DoubleReview.objects.filter(outcome=DoubleReviewOutcome.PENDING).count(),
        awaiting_admin=DoubleReview.objects.filter(
            outcome__in=[DoubleReviewOutcome.DISAGREED, DoubleReviewOutcome.ESCALATED],
            final_decision__isnull=True,
        ).count(),
    )
