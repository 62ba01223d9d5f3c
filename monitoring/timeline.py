"""Periods, activation segments and reference windows, pure (no Django).

Every time series of the monitoring page is built from per-day counts of one model version:

- A period is a UTC day, or an ISO week (Monday to Sunday); weeks are sums of their days.
- Segments: each activation of the version starts a new segment (a rollback is an activation
  too), so the reference restarts at every activation. A day belongs to the segment of the
  latest activation at or before its start; days before the version's first activation (history
  scored before it, e.g. replayed traffic) belong to the first segment.
- Reference window: the first REFERENCE_DAYS days of a segment, counted from the segment's
  first day with data, extended day by day until it holds at least `min_count` (e.g. reviewed
  messages) when the caller asks for one - a sparse series needs more days to know its normal
  rate. A segment that never reaches it is all reference. Reference counts are summed over the
  window's days. A period that contains a reference day is a reference period: it is drawn,
  but never alerted on.
- A period belongs to the segment of its first day with data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Generic, TypeVar

DAY = "day"
WEEK = "week"
PERIODS = (DAY, WEEK)
REFERENCE_DAYS = 7

C = TypeVar("C")


def period_start(day: date, period: str) -> date:
    """The first day of the period that contains `day`."""
    if period == DAY:
        return day
    if period == WEEK:
        return day - timedelta(days=day.weekday())
    raise ValueError(f"period must be one of {PERIODS}, not {period!r}")


def period_end(start: date, period: str) -> date:
    """The day after the period that starts on `start`."""
    return start + timedelta(days=1 if period == DAY else 7)


def day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def segment_of(day: date, activations: Sequence[datetime]) -> int:
    """Index of the segment `day` belongs to, for the version's sorted activation times."""
    start = day_start(day)
    index = 0
    for i, activated_at in enumerate(activations):
        if activated_at <= start:
            index = i
    return index


@dataclass(frozen=True)
class Window:
    segment: int
    first_day: date
    end: date  # exclusive

    def contains(self, day: date) -> bool:
        return self.first_day <= day < self.end


def reference_windows(
    daily: Mapping[date, C],
    activations: Sequence[datetime],
    *,
    reference_days: int = REFERENCE_DAYS,
    min_count: int = 0,
    count: Callable[[C], int] | None = None,
) -> dict[int, Window]:
    """{segment: its reference window} for the segments that have data."""
    by_segment: dict[int, list[date]] = {}
    for day in sorted(daily):
        by_segment.setdefault(segment_of(day, activations), []).append(day)
    windows = {}
    for segment, days in by_segment.items():
        first, total, end = days[0], 0, None
        for day in days:
            if day >= first + timedelta(days=reference_days) and total >= min_count:
                end = day
                break
            total += count(daily[day]) if count is not None else 0
        windows[segment] = Window(segment, first, end or days[-1] + timedelta(days=1))
    return windows


@dataclass
class PeriodPoint(Generic[C]):
    start: date
    segment: int
    counts: C
    is_reference: bool


@dataclass
class Series(Generic[C]):
    """One version's periods, and the summed counts of each segment's reference window."""

    points: list[PeriodPoint[C]]
    references: dict[int, tuple[Window, C]]


def build_series(
    daily: Mapping[date, C],
    *,
    period: str,
    activations: Sequence[datetime],
    add: Callable[[C, C], C],
    zero: Callable[[], C],
    reference_days: int = REFERENCE_DAYS,
    min_count: int = 0,
    count: Callable[[C], int] | None = None,
) -> Series[C]:
    """Group per-day counts into periods, assign segments and mark reference periods.
    `add` sums two counts; `zero` makes an empty one; `count` sizes one for `min_count`."""
    activations = sorted(activations)
    windows = reference_windows(
        daily, activations, reference_days=reference_days, min_count=min_count, count=count
    )
    references: dict[int, tuple[Window, C]] = {s: (w, zero()) for s, w in windows.items()}
    grouped: dict[date, tuple[int, C, bool]] = {}
    for day in sorted(daily):
        segment = segment_of(day, activations)
        window = windows[segment]
        in_reference = window.contains(day)
        if in_reference:
            references[segment] = (window, add(references[segment][1], daily[day]))
        start = period_start(day, period)
        if start in grouped:
            first_segment, counts, was_reference = grouped[start]
            grouped[start] = (first_segment, add(counts, daily[day]), was_reference or in_reference)
        else:
            grouped[start] = (segment, add(zero(), daily[day]), in_reference)
    points = [
        PeriodPoint(start=start, segment=segment, counts=counts, is_reference=is_reference)
        for start, (segment, counts, is_reference) in sorted(grouped.items())
    ]
    return Series(points=points, references=references)
