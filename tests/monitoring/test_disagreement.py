"""Disagreement per claim type and period, and its alerts, on small fixtures with known answers."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.roles import Role
from monitoring import selectors, stats
from monitoring.services import rollup_refresh
from tests.factories import ReviewDecisionFactory, UserFactory, claim_type
from tests.monitoring.conftest import day_at, decide, routed

pytestmark = pytest.mark.django_db


def disagreement(version, period: str) -> dict:
    rollup_refresh()
    return selectors.disagreement(version=version, period=period)


def alerts(**kwargs) -> list[dict]:
    rollup_refresh()
    return selectors.alerts(**kwargs)


def series_of(result: dict, key: str) -> dict:
    return next(s for s in result["series"] if s["claim_type"] == key)


def test_flags_count_under_the_models_type_and_misses_under_the_reviewers(version, base_day):
    # given one day of five decisions
    at = day_at(base_day)
    gr_agree = routed(version, received_at=at, score=0.9, claim_code="guaranteed_returns")
    gr_false_positive = routed(version, received_at=at, score=0.8, claim_code="guaranteed_returns")
    rf_flag_said_gr = routed(version, received_at=at, score=0.7, claim_code="risk_free")
    qa_miss_rf = routed(version, received_at=at, score=0.1, claim_code="performance_forecast")
    qa_true_negative = routed(version, received_at=at, score=0.05, claim_code="performance_forecast")
    decide(gr_agree, verdict="claim", claim_code="guaranteed_returns", at=at + timedelta(hours=1))
    decide(gr_false_positive, verdict="no_claim", at=at + timedelta(hours=2))
    decide(rf_flag_said_gr, verdict="claim", claim_code="guaranteed_returns", at=at + timedelta(hours=3))
    decide(qa_miss_rf, verdict="claim", claim_code="risk_free", at=at + timedelta(hours=4))
    decide(qa_true_negative, verdict="no_claim", at=at + timedelta(hours=5))

    # when
    result = disagreement(version, "day")

    # then
    gr = series_of(result, "guaranteed_returns")["points"]
    assert len(gr) == 1
    assert (gr[0]["n"], gr[0]["disagreements"], gr[0]["false_positives"], gr[0]["both_claim"]) == (2, 1, 1, 1)
    rf = series_of(result, "risk_free")["points"][0]
    assert (rf["n"], rf["disagreements"], rf["false_negatives"], rf["type_mismatches"]) == (2, 1, 1, 1)
    assert rf["type_mismatch_rate"] == 1.0
    assert series_of(result, "performance_forecast")["points"] == []
    everything = series_of(result, "all")["points"][0]
    assert (everything["n"], everything["disagreements"], everything["qa_sample"]) == (5, 2, 2)
    expected = stats.rate(1, 2)
    assert (gr[0]["rate"], gr[0]["low"], gr[0]["high"]) == (expected.rate, expected.low, expected.high)
    assert gr[0]["start"] == base_day.isoformat() and gr[0]["is_reference"] is True


def test_only_the_latest_decided_record_of_a_message_counts(version, base_day, admin_user):
    at = day_at(base_day)
    reviewer = UserFactory(username="first_reviewer", role=Role.REVIEWER)
    corrected = routed(version, received_at=at, score=0.9)
    first = decide(corrected, verdict="claim", claim_code="guaranteed_returns", at=at, reviewer=reviewer)
    ReviewDecisionFactory(
        message=corrected,
        reviewer=admin_user,
        verdict="no_claim",
        claim_type=None,
        supersedes=first,
        supersede_reason="misread the sentence",
        decided_at=at + timedelta(hours=1),
    )
    escalated_then_decided = routed(version, received_at=at, score=0.9)
    decide(escalated_then_decided, verdict="escalate", at=at + timedelta(hours=2), reviewer=reviewer)
    escalated_then_decided.refresh_from_db()
    ReviewDecisionFactory(
        message=escalated_then_decided,
        reviewer=admin_user,
        verdict="claim",
        claim_type=claim_type("guaranteed_returns"),
        decided_at=at + timedelta(hours=3),
    )
    still_escalated = routed(version, received_at=at, score=0.9)
    decide(still_escalated, verdict="escalate", at=at + timedelta(hours=4), reviewer=reviewer)

    point = series_of(disagreement(version, "day"), "guaranteed_returns")["points"][0]

    # the correction (a false positive) and the second-level claim; not the superseded claim
    # nor the escalation still waiting
    assert (point["n"], point["disagreements"], point["false_positives"]) == (2, 1, 1)


def test_weeks_run_monday_to_sunday_and_sum_their_days(version, base_day):
    monday, sunday, next_monday = base_day, base_day + timedelta(days=6), base_day + timedelta(days=7)
    for day, verdict in ((monday, "claim"), (sunday, "no_claim"), (next_monday, "claim")):
        message = routed(version, received_at=day_at(day, 9), score=0.9)
        decide(
            message,
            verdict=verdict,
            claim_code="guaranteed_returns" if verdict == "claim" else None,
            at=day_at(day, 10),
        )

    points = series_of(disagreement(version, "week"), "guaranteed_returns")["points"]

    assert [(p["start"], p["end"], p["n"], p["disagreements"]) for p in points] == [
        (monday.isoformat(), next_monday.isoformat(), 2, 1),
        (next_monday.isoformat(), (next_monday + timedelta(days=7)).isoformat(), 1, 0),
    ]


def _day_of_flags(version, day, *, total: int, disagreeing: int, code: str = "risk_free") -> None:
    """`total` flagged messages of `code` decided on `day`, `disagreeing` of them judged not a claim."""
    for i in range(total):
        message = routed(version, received_at=day_at(day, 8, i), score=0.9, claim_code=code)
        if i < disagreeing:
            decide(message, verdict="no_claim", at=day_at(day, 12, i))
        else:
            decide(message, verdict="claim", claim_code=code, at=day_at(day, 12, i))


@pytest.fixture
def rise_and_noise(version, base_day, settings):
    """Reference: days 0-1, 1 disagreement in 40. Day 3: noise (1 in 10). Day 5: a rise (7 in 10)."""
    settings.MONITORING_REFERENCE_DAYS = 2
    _day_of_flags(version, base_day, total=20, disagreeing=1)
    _day_of_flags(version, base_day + timedelta(days=1), total=20, disagreeing=0)
    _day_of_flags(version, base_day + timedelta(days=3), total=10, disagreeing=1)
    _day_of_flags(version, base_day + timedelta(days=5), total=10, disagreeing=7)
    return base_day


def test_an_alert_fires_on_a_constructed_rise_and_not_on_noise(version, rise_and_noise):
    base_day = rise_and_noise

    result = disagreement(version, "day")

    points = {p["start"]: p for p in series_of(result, "risk_free")["points"]}
    assert points[base_day.isoformat()]["is_reference"]
    assert not points[(base_day + timedelta(days=3)).isoformat()]["alert"]
    rise = points[(base_day + timedelta(days=5)).isoformat()]
    assert rise["alert"] and rise["difference_low"] > 0
    reference = series_of(result, "risk_free")["references"][0]
    assert (reference["n"], reference["disagreements"]) == (40, 1)
    assert reference["from"] == base_day.isoformat()
    # the window ends at the first day with data once it is 2 days long and holds >= 30
    assert reference["to"] == (base_day + timedelta(days=3)).isoformat()
    fired = [(a["claim_type"], a["start"]) for a in result["alerts"]]
    assert ("risk_free", (base_day + timedelta(days=5)).isoformat()) in fired
    assert ("risk_free", (base_day + timedelta(days=3)).isoformat()) not in fired
    alert = next(a for a in result["alerts"] if a["claim_type"] == "risk_free")
    assert "7 of 10" in alert["message"] and "1 of 40" in alert["message"]


def test_the_alerts_list_covers_every_version(version, rise_and_noise):
    listed = alerts(period="day")
    assert {(a["model_version"]["id"], a["claim_type"]) for a in listed} >= {(version.pk, "risk_free")}
    assert alerts(period="day", version=version) == [
        a for a in listed if a["model_version"]["id"] == version.pk
    ]


def test_an_activation_restarts_the_reference(version, base_day, settings):
    from scoring.models import ModelActivation

    settings.MONITORING_REFERENCE_DAYS = 1
    settings.MONITORING_REFERENCE_MIN_REVIEWED = 0

    def activate(day, reason):
        activation = ModelActivation.objects.create(model_version=version, reason=reason)
        ModelActivation.objects.filter(pk=activation.pk).update(activated_at=day_at(day, 0))

    activate(base_day, "first activation")
    _day_of_flags(version, base_day, total=10, disagreeing=0)
    _day_of_flags(version, base_day + timedelta(days=2), total=10, disagreeing=6)
    activate(base_day + timedelta(days=3), "rolled back to this version")
    _day_of_flags(version, base_day + timedelta(days=3), total=10, disagreeing=6)
    _day_of_flags(version, base_day + timedelta(days=4), total=10, disagreeing=6)

    series = series_of(disagreement(version, "day"), "risk_free")

    by_day = {p["start"]: p for p in series["points"]}
    # against the first activation's reference (0 of 10), 6 of 10 is an alert
    assert by_day[(base_day + timedelta(days=2)).isoformat()]["alert"] is True
    after = by_day[(base_day + timedelta(days=3)).isoformat()]
    assert after["segment"] == 1 and after["is_reference"] is True
    assert [(r["segment"], r["n"]) for r in series["references"]] == [(0, 10), (1, 10)]
    # the same 6 of 10 a day later is no alert: the reference restarted at the rollback
    assert by_day[(base_day + timedelta(days=4)).isoformat()]["alert"] is False


def test_a_sparse_reference_extends_until_it_holds_enough_reviewed_messages(version, base_day, settings):
    settings.MONITORING_REFERENCE_DAYS = 1
    settings.MONITORING_REFERENCE_MIN_REVIEWED = 15
    for offset in range(4):  # 5 a day: the reference needs days 0-2 to hold 15
        _day_of_flags(version, base_day + timedelta(days=offset), total=5, disagreeing=0)
    _day_of_flags(version, base_day + timedelta(days=4), total=10, disagreeing=8)

    series = series_of(disagreement(version, "day"), "risk_free")

    assert [(r["from"], r["to"], r["n"]) for r in series["references"]] == [
        (base_day.isoformat(), (base_day + timedelta(days=3)).isoformat(), 15)
    ]
    flags = [(p["is_reference"], p["alert"]) for p in series["points"]]
    assert flags == [(True, False), (True, False), (True, False), (False, False), (False, True)]
