"""Drift read from the daily roll-up: message length against the corpus, score PSI against the
reference window, rules vs model, explanation health and the queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from explanations.faithfulness import PASS_RULE
from explanations.models import CanaryCheck
from monitoring import selectors, stats
from monitoring.services import rollup_refresh
from scoring.constants import MessageStatus
from tests.factories import ExplanationFactory
from tests.monitoring.conftest import day_at, decide, explained, length_reference_for, routed

pytestmark = pytest.mark.django_db


def test_length_share_above_p99_and_psi_against_the_corpus(version, base_day):
    # given a corpus reference: bins (-inf, 50), [50, 100), [100, inf) holding 25/50/25 %, p99 150
    length_reference_for(version, edges=[50, 100], proportions=[0.25, 0.5, 0.25], p99=150)
    day0, day1 = base_day, base_day + timedelta(days=1)
    for day, lengths in ((day0, [30, 80, 80, 120]), (day1, [30, 200, 300, 80])):
        for i, n in enumerate(lengths):
            routed(version, received_at=day_at(day, 9, i), score=0.01, route="cleared", body="x" * n)
    rollup_refresh()

    points = selectors.length_drift(version=version, period="day")["points"]

    # day 0 matches the corpus: histogram [1, 2, 1], nothing above 150, PSI 0
    assert (points[0]["histogram"], points[0]["longer_than_p99"], points[0]["psi"]) == ([1, 2, 1], 0, 0.0)
    # day 1: [1, 1, 2]; 2 of 4 above 150; PSI = -0.25 ln 0.5 + 0.25 ln 2 = 0.346574
    assert (points[1]["histogram"], points[1]["longer_than_p99"], points[1]["share"]) == ([1, 1, 2], 2, 0.5)
    assert points[1]["psi"] == pytest.approx(0.346574, abs=1e-6)
    assert points[1]["low"] == stats.rate(2, 4).low


def test_length_drift_says_when_the_corpus_cannot_be_found(version, base_day):
    routed(version, received_at=day_at(base_day), score=0.01, route="cleared")
    rollup_refresh()
    result = selectors.length_drift(version=version, period="day")
    assert result["reference"]["available"] is False
    assert "no corpus file" in result["reference"]["reason"]
    assert result["points"][0]["messages"] == 1 and result["points"][0]["share"] is None


def test_a_corpus_without_a_train_split_is_named_without_its_server_path(version, settings, tmp_path):
    import json

    from monitoring.length_reference import length_reference_ensure
    from scoring.classifier.data import corpus_sha256

    corpus = tmp_path / "held" / "claims.jsonl"
    corpus.parent.mkdir()
    corpus.write_text(json.dumps({"id": "x", "body": "hello", "split": "test"}) + "\n", encoding="utf-8")
    settings.CORPUS_PATH = str(corpus)
    reference = length_reference_ensure(corpus_sha256=corpus_sha256(corpus))
    assert reference.available is False
    assert reference.reason == "claims.jsonl has no train split"


def test_score_psi_is_measured_against_the_reference_window(version, base_day, settings, monkeypatch):
    settings.MONITORING_REFERENCE_DAYS = 2
    monkeypatch.setattr("monitoring.selectors.drift.SCORE_REFERENCE_MIN_MESSAGES", 6)
    reference_scores = [0.01, 0.02, 0.03, 0.9, 0.004, 0.2]
    later_scores = [0.6, 0.7, 0.8, 0.9, 0.95, 0.99]
    for offset, scores in ((0, reference_scores[:3]), (1, reference_scores[3:]), (4, later_scores)):
        for i, score in enumerate(scores):
            routed(
                version,
                received_at=day_at(base_day + timedelta(days=offset), 10, i),
                score=score,
                route="cleared" if score < 0.5 else None,
                status=MessageStatus.CLEARED if score < 0.5 else MessageStatus.IN_REVIEW,
            )
    rollup_refresh()

    result = selectors.score_drift(version=version, period="day")

    expected_reference = stats.histogram(reference_scores, stats.SCORE_EDGES)
    assert result["references"][0]["histogram"] == expected_reference
    points = {p["start"]: p for p in result["points"]}
    later = points[(base_day + timedelta(days=4)).isoformat()]
    assert later["is_reference"] is False
    assert later["psi"] == pytest.approx(
        stats.psi(expected_reference, stats.histogram(later_scores, stats.SCORE_EDGES))
    )
    assert later["psi"] > stats.PSI_MAJOR
    assert points[base_day.isoformat()]["is_reference"] is True


def test_rules_vs_model_counts_rule_hits_not_flagged_and_flags_without_a_rule(version, base_day):
    at = day_at(base_day, 9)
    routed(version, received_at=at, score=0.9, rule_code="guaranteed_returns")  # flag + rule
    routed(version, received_at=at + timedelta(minutes=1), score=0.8, rule_code="guaranteed_returns")
    routed(version, received_at=at + timedelta(minutes=2), score=0.7)  # flag, no rule
    routed(
        version, received_at=at + timedelta(minutes=3), score=0.2, rule_code="guaranteed_returns"
    )  # missed
    routed(version, received_at=at + timedelta(minutes=4), score=0.9, claim_code="risk_free")
    rollup_refresh()

    series = {s["claim_type"]: s for s in selectors.rules_vs_model(version=version, period="day")["series"]}

    gr = series["guaranteed_returns"]["points"][0]
    assert (gr["rule_hits"], gr["rule_hits_not_flagged"], gr["model_flags"], gr["flags_without_rule"]) == (
        3,
        1,
        3,
        1,
    )
    assert gr["rule_hits_not_flagged_rate"] == pytest.approx(1 / 3)
    rf = series["risk_free"]["points"][0]
    assert (rf["rule_hits"], rf["model_flags"], rf["flags_without_rule_rate"]) == (0, 1, 1.0)
    assert rf["rule_hits_not_flagged_rate"] is None


def test_explanation_pass_rate_per_method_period_and_version(version, base_day):
    at = day_at(base_day, 9)
    for i, passed in enumerate([True, True, False]):
        explained(routed(version, received_at=at + timedelta(minutes=i), score=0.9), passed=passed)
    failed = routed(version, received_at=at + timedelta(minutes=5), score=0.9)
    ExplanationFactory(message=failed, prediction=failed.routing_prediction, status="failed", passed=None)
    CanaryCheck.objects.create(
        model_version=version, pass_rates={"integrated_gradients": 0.9}, findings=[{"id": "x"}]
    )
    rollup_refresh()

    result = selectors.explanation_health(version=version, period="day")

    ig = result["points"][0]["methods"]["integrated_gradients"]
    assert (ig["computed"], ig["passed"], ig["failed"], ig["rate"]) == (3, 2, 1, pytest.approx(2 / 3))
    assert result["per_version"][0]["methods"]["integrated_gradients"]["passed"] == 2
    assert result["canary_checks"][0]["findings"] == 1
    assert result["pass_rule"] == PASS_RULE


def test_queue_health_counts_what_waits_and_decisions_per_reviewer_per_day(version, reviewer):
    now = timezone.now()
    oldest = routed(version, received_at=now - timedelta(hours=30), score=0.9)
    routed(version, received_at=now - timedelta(hours=2), score=0.9)
    routed(version, received_at=now - timedelta(hours=1), score=0.9, status=MessageStatus.SCORED)
    decide(oldest, verdict="no_claim", at=now - timedelta(minutes=5), reviewer=reviewer)

    result = selectors.queue_health(now=now)

    waiting = {w["status"]: w for w in result["waiting"]}
    assert waiting["in_review"]["messages"] == 1
    assert waiting["in_review"]["oldest_age_seconds"] == pytest.approx(2 * 3600, abs=5)
    assert waiting["scored"]["messages"] == 1 and waiting["escalated"]["messages"] == 0
    assert result["decisions_per_reviewer_per_day"] == [
        {"reviewer": reviewer.username, "day": (now - timedelta(minutes=5)).date().isoformat(), "n": 1}
    ]
