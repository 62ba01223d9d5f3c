"""Precision from reviewed flags, recall estimated from the QA sample, and the confusion matrix,
on a fixture whose answers are worked by hand below."""

from __future__ import annotations

from datetime import timedelta

import pytest

from monitoring import selectors
from monitoring.services import rollup_refresh
from scoring.constants import MessageStatus
from tests.monitoring.conftest import day_at, decide, routed

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewed_traffic(version, base_day):
    """Flagged (all predicted guaranteed_returns): 10 messages, 8 reviewed: 6 claims of that type,
    1 risk_free claim, 1 not a claim. Rule hits below threshold: 4, all reviewed, 1 claim. Below
    threshold without a rule: 40 cleared and 10 QA samples, 1 of them a risk_free claim."""
    at = day_at(base_day, 6)
    verdicts = [("claim", "guaranteed_returns")] * 6 + [("claim", "risk_free"), ("no_claim", None)]
    tick = iter(range(1000))

    def later():
        return at + timedelta(minutes=next(tick))

    for i in range(10):
        message = routed(version, received_at=later(), score=0.9, claim_code="guaranteed_returns")
        if i < 8:
            decide(message, verdict=verdicts[i][0], claim_code=verdicts[i][1], at=later())
    for i in range(4):
        message = routed(version, received_at=later(), score=0.2, rule_code="guaranteed_returns")
        decide(
            message,
            verdict="claim" if i == 0 else "no_claim",
            claim_code="guaranteed_returns" if i == 0 else None,
            at=later(),
        )
    for _ in range(40):
        routed(version, received_at=later(), score=0.01, route="cleared", status=MessageStatus.CLEARED)
    for i in range(10):
        message = routed(version, received_at=later(), score=0.02, claim_code="performance_forecast")
        decide(
            message,
            verdict="claim" if i == 0 else "no_claim",
            claim_code="risk_free" if i == 0 else None,
            at=later(),
        )
    rollup_refresh()
    return version


def by_type(result: dict, code: str) -> dict:
    return next(t for t in result["per_claim_type"] if t["claim_type"] == code)


def test_strata_count_messages_from_the_rollup_and_reviews_from_decisions(reviewed_traffic):
    result = selectors.quality(version=reviewed_traffic)
    assert result["strata"] == {
        "flagged": {"messages": 10, "reviewed": 8, "claims": 7},
        "rule_only": {"messages": 4, "reviewed": 4, "claims": 1},
        "unread_part": {"messages": 0, "reviewed": 0, "claims": 0},
        "below_threshold": {"messages": 50, "reviewed": 10, "claims": 1},
    }


def test_messages_routed_for_a_part_not_read_are_a_stratum_of_their_own_not_in_the_qa_population(
    reviewed_traffic, base_day
):
    # two more below threshold, each reviewed for a part that could not be read: one a claim
    at = day_at(base_day, 12)  # after the fixture's decisions: the audit chain is in time order
    for i in range(2):
        message = routed(
            reviewed_traffic, received_at=at + timedelta(minutes=i), score=0.2, route="unread_part"
        )
        decide(
            message,
            verdict="claim" if i == 0 else "no_claim",
            claim_code="guaranteed_returns" if i == 0 else None,
            at=at + timedelta(minutes=10 + i),
        )
    rollup_refresh()

    result = selectors.quality(version=reviewed_traffic)

    assert result["strata"] == {
        "flagged": {"messages": 10, "reviewed": 8, "claims": 7},
        "rule_only": {"messages": 4, "reviewed": 4, "claims": 1},
        "unread_part": {"messages": 2, "reviewed": 2, "claims": 1},
        "below_threshold": {"messages": 50, "reviewed": 10, "claims": 1},
    }
    # caught 10 * 7/8 = 8.75, rule hits 1, parts not read 1, below threshold 50 * 1/10 = 5
    assert result["overall"]["recall"]["recall"] == pytest.approx(8.75 / 15.75)


def test_overall_precision_and_estimated_recall_match_the_hand_computation(reviewed_traffic):
    # precision 7/8; recall: caught 10 * 7/8 = 8.75, rule hits 1, below threshold 50 * 1/10 = 5
    # -> 8.75 / 14.75 = 0.593220
    overall = selectors.quality(version=reviewed_traffic)["overall"]
    assert overall["precision"]["rate"] == 7 / 8
    assert overall["recall"]["recall"] == pytest.approx(8.75 / 14.75)
    assert overall["recall"]["estimated_claims"] == pytest.approx(14.75)
    assert overall["recall"]["low"] < overall["recall"]["recall"] < overall["recall"]["high"]


def test_per_type_precision_is_by_the_models_type_and_recall_by_the_reviewers(reviewed_traffic):
    result = selectors.quality(version=reviewed_traffic)
    gr = by_type(result, "guaranteed_returns")
    # flagged as GR and reviewed: 8, of which 7 claims (any type) and 6 of that type
    assert (gr["flagged_messages"], gr["reviewed_flagged"]) == (10, 8)
    assert gr["precision"]["rate"] == 7 / 8 and gr["type_precision"]["rate"] == 6 / 8
    # GR claims: caught 10 * 6/8 = 7.5, rule hits 1, QA 0 -> 7.5 / 8.5; the QA share 0 of 10 has
    # Wilson high 0.277533 -> worst case 7.5 / (8.5 + 50 * 0.277533) = 0.335171
    assert gr["recall"]["recall"] == pytest.approx(7.5 / 8.5)
    assert gr["recall"]["high"] == pytest.approx(7.5 / 8.5)
    assert gr["recall"]["low"] == pytest.approx(0.335171, abs=1e-4)
    rf = by_type(result, "risk_free")
    # nothing flagged as RF: precision unknown; RF claims: caught 10 * 1/8 = 1.25, QA 50 * 1/10 = 5
    assert rf["precision"]["rate"] is None and rf["reviewed_flagged"] == 0
    assert rf["recall"]["recall"] == pytest.approx(1.25 / 6.25)


def test_the_confusion_matrix_puts_reviewers_in_rows_and_the_model_in_columns(reviewed_traffic):
    result = selectors.confusion(version=reviewed_traffic)
    assert result["labels"] == [
        "no_claim",
        "guaranteed_returns",
        "risk_free",
        "performance_forecast",
        "regulatory_endorsement",
    ]
    assert result["matrix"] == [
        [12, 1, 0, 0, 0],  # reviewer: not a claim (3 rule hits + 9 QA; 1 flagged)
        [1, 6, 0, 0, 0],  # reviewer: guaranteed_returns (1 rule hit the model did not flag)
        [1, 1, 0, 0, 0],  # reviewer: risk_free (1 QA miss; 1 flagged as GR)
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
    ]
    assert (result["total"], result["agreement"]) == (22, 18)


def test_quality_of_no_version_is_empty():
    assert selectors.quality(version=None)["overall"] is None
    assert selectors.confusion(version=None)["matrix"][0] == [0, 0, 0, 0, 0]
