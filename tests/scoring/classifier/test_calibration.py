"""Temperature scaling (scoring.classifier.calibration) and the evaluation helpers of
scoring.classifier.evaluation: pure functions, checked against numbers worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from scoring.classifier.calibration import (
    fit_length_penalty,
    fit_temperature,
    fold_temperature,
    length_discounted,
    message_scores,
    tempered_claim_scores,
)
from scoring.classifier.evaluation import reliability, summarize_decisions


def softmax(logits):
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_a_temperature_of_one_changes_nothing_and_a_higher_one_moves_scores_toward_the_uniform():
    probabilities = softmax(np.array([[2.0, 0.5, 0.1, 0.0, -1.0], [-3.0, 4.0, 0.0, 0.0, 0.0]]))
    claim = probabilities[:, 1:].sum(axis=1)
    assert tempered_claim_scores(probabilities, 1.0) == pytest.approx(claim)
    # four claim classes of five: with T -> infinity every class is 1/5 and the score 4/5
    softer = tempered_claim_scores(probabilities, 3.0)
    assert all(abs(s - 0.8) < abs(c - 0.8) for s, c in zip(softer, claim, strict=True))
    assert tempered_claim_scores(probabilities, 1e6) == pytest.approx([0.8, 0.8], abs=1e-4)


def test_the_message_score_is_the_max_over_its_windows():
    assert message_scores(np.array([0.1, 0.9, 0.3, 0.2, 0.4]), [0, 2, 3, 5]).tolist() == [0.9, 0.3, 0.4]


def test_fitting_recovers_the_temperature_that_made_over_confident_scores():
    # given messages whose true claim probability is sigmoid(z), scored by a model whose logits
    # are 4 times too large
    rng = np.random.default_rng(0)
    z = rng.normal(0, 1.5, 4000)
    labels = (rng.random(4000) < 1 / (1 + np.exp(-z))).astype(int)
    logits = np.stack(
        [np.zeros_like(z), 4 * z, np.full_like(z, -30), np.full_like(z, -30), np.full_like(z, -30)], 1
    )
    # when
    temperature, report = fit_temperature(softmax(logits), list(range(4001)), labels.tolist())
    # then
    assert temperature == pytest.approx(4.0, rel=0.1)
    assert report["val_log_loss_after"] < report["val_log_loss_before"]


def test_the_length_term_lowers_the_log_odds_by_the_penalty_times_ln_windows():
    scores = np.array([0.5, 0.5, 0.9])
    # one window: unchanged; 4 windows at penalty 1: log-odds 0 - ln 4, so 1 / (1 + 4)
    assert length_discounted(scores, [1, 4, 1], 1.0) == pytest.approx([0.5, 0.2, 0.9])
    assert length_discounted(scores, [1, 4, 9], 0.0) == pytest.approx(scores)
    # no routing window counts as one
    assert length_discounted([0.5], [0], 2.0) == pytest.approx([0.5])


def test_fitting_recovers_the_penalty_that_inflated_long_messages_scores():
    # given messages whose true claim probability is sigmoid(z), whose best window over n
    # windows over-states it by 0.8 * ln(n) in log-odds
    rng = np.random.default_rng(1)
    z = rng.normal(-1, 2, 6000)
    n = rng.integers(1, 20, 6000)
    labels = (rng.random(6000) < 1 / (1 + np.exp(-z))).astype(int)
    best = 1 / (1 + np.exp(-(z + 0.8 * np.log(n))))
    # when
    penalty, report = fit_length_penalty(best, n, labels)
    # then
    assert penalty == pytest.approx(0.8, abs=0.1)
    assert report["val_log_loss_after_length"] < report["val_log_loss_before_length"]
    # and scores that already mean what they say get no penalty
    honest, _ = fit_length_penalty(1 / (1 + np.exp(-z)), n, labels)
    assert honest <= 0.05


def test_fitting_the_penalty_needs_one_count_and_label_per_score():
    with pytest.raises(ValueError, match="window counts"):
        fit_length_penalty([0.5, 0.5], [1], [0, 1])


def test_fitting_needs_both_classes():
    with pytest.raises(ValueError, match="both claims and non-claims"):
        fit_temperature(softmax(np.zeros((3, 5))), [0, 1, 2, 3], [1, 1, 1])


def test_folding_the_temperature_into_the_head_divides_its_logits():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.classifier = torch.nn.Linear(4, 5)

    model = Model()
    x = torch.randn(3, 4)
    before = model.classifier(x).detach()
    fold_temperature(model, 2.5)
    assert torch.allclose(model.classifier(x), before / 2.5, atol=1e-6)


def test_the_expected_calibration_error_is_the_count_weighted_gap_per_bin():
    # bin [0.1, 0.2): scores 0.15, 0.15, labels 0, 1 -> gap |0.15 - 0.5| = 0.35, weight 2/4
    # bin [0.9, 1.0]: scores 0.95, 1.0, labels 1, 1 -> gap |0.975 - 1| = 0.025, weight 2/4
    report = reliability([0.15, 0.15, 0.95, 1.0], [0, 1, 1, 1])
    assert report["ece"] == pytest.approx(0.5 * 0.35 + 0.5 * 0.025)
    assert [b["n"] for b in report["bins"]] == [0, 2, 0, 0, 0, 0, 0, 0, 0, 2]
    assert report["bins"][9]["claim_share"] == 1.0 and report["bins"][2]["mean_score"] is None
    assert reliability([], [])["ece"] is None


def test_the_routing_decision_is_counted_apart_from_the_model_flag_per_kind_and_type():
    rows = [
        {"label": 1, "claim_type": "risk_free", "kind": "plain", "flagged": True, "routed": True},
        {"label": 1, "claim_type": "risk_free", "kind": "euphemism", "flagged": False, "routed": True},
        {"label": 1, "claim_type": "guaranteed_returns", "kind": "plain", "flagged": False, "routed": False},
        {"label": 0, "claim_type": "no_claim", "kind": "plain", "flagged": False, "routed": True},
        {"label": 0, "claim_type": "no_claim", "kind": "plain", "flagged": False, "routed": False},
    ]
    summary = summarize_decisions(rows)
    assert summary["flagged"]["overall"]["recall"] == pytest.approx(1 / 3)
    assert summary["routed"]["overall"]["recall"] == pytest.approx(2 / 3)
    assert summary["routed"]["overall"]["precision"] == pytest.approx(2 / 3)
    assert summary["routed"]["per_claim_type"]["risk_free"]["recall"] == 1.0
    assert summary["routed"]["per_kind"]["plain"]["false_positive_rate"] == 0.5
    assert math.isclose(summary["flagged"]["per_kind"]["euphemism"]["recall"], 0.0)
