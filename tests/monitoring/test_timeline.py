"""Periods, segments and reference windows (pure)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from monitoring import timeline

MONDAY = date(2024, 5, 6)


def test_weeks_start_on_monday_and_days_are_themselves():
    assert timeline.period_start(MONDAY + timedelta(days=6), "week") == MONDAY
    assert timeline.period_start(MONDAY + timedelta(days=7), "week") == MONDAY + timedelta(days=7)
    assert timeline.period_start(MONDAY + timedelta(days=3), "day") == MONDAY + timedelta(days=3)
    assert timeline.period_end(MONDAY, "week") == MONDAY + timedelta(days=7)
    with pytest.raises(ValueError, match="period"):
        timeline.period_start(MONDAY, "month")


def test_days_before_the_first_activation_belong_to_the_first_segment():
    activations = [
        datetime(2024, 5, 8, 12, tzinfo=UTC),
        datetime(2024, 5, 10, 0, tzinfo=UTC),
    ]
    segments = [timeline.segment_of(MONDAY + timedelta(days=i), activations) for i in range(6)]
    # May 6-8 -> 0 (the activation at noon on the 8th starts with the 9th), 9 -> 0, 10-11 -> 1
    assert segments == [0, 0, 0, 0, 1, 1]


def test_the_reference_window_is_at_least_n_days_and_extends_to_a_minimum_count():
    daily = {MONDAY + timedelta(days=i): 4 for i in range(10)}
    short = timeline.reference_windows(daily, [], reference_days=2)
    assert short[0] == timeline.Window(0, MONDAY, MONDAY + timedelta(days=2))
    counted = timeline.reference_windows(daily, [], reference_days=2, min_count=10, count=lambda n: n)
    assert counted[0].end == MONDAY + timedelta(days=3)  # 4 + 4 + 4 >= 10 after three days
    never = timeline.reference_windows(daily, [], reference_days=2, min_count=1000, count=lambda n: n)
    assert never[0].end == MONDAY + timedelta(days=10)  # all reference


def test_build_series_sums_days_into_weeks_and_marks_reference_weeks():
    daily = {MONDAY + timedelta(days=i): 1 for i in range(15)}
    series = timeline.build_series(
        daily, period="week", activations=[], add=lambda a, b: a + b, zero=int, reference_days=3
    )
    assert [(p.start, p.counts, p.is_reference) for p in series.points] == [
        (MONDAY, 7, True),
        (MONDAY + timedelta(days=7), 7, False),
        (MONDAY + timedelta(days=14), 1, False),
    ]
    window, total = series.references[0]
    assert (window.first_day, window.end, total) == (MONDAY, MONDAY + timedelta(days=3), 3)
