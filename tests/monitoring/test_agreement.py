"""Reviewer agreement statistics (monitoring.agreement), against tables worked by hand and against
scikit-learn's cohen_kappa_score. Pure: no database."""

from __future__ import annotations

import random

import pytest
from sklearn.metrics import cohen_kappa_score

from monitoring.agreement import MIN_PAIRS, cohen_kappa, confusion, kappa_from_table, percent_agreement


def pairs_of(table: list[list[int]], labels: list[str]) -> list[tuple[str, str]]:
    return [
        (labels[i], labels[j])
        for i, row in enumerate(table)
        for j, count in enumerate(row)
        for _ in range(count)
    ]


def test_kappa_and_its_interval_of_a_two_by_two_table_worked_by_hand():
    # 50 messages: both say claim 20, first claim / second not 5, first not / second claim 10, both not 15.
    # p_o = 35/50 = 0.7; rows 0.5, 0.5; columns 0.6, 0.4; p_e = 0.5*0.6 + 0.5*0.4 = 0.5;
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    # Variance (Fleiss, Cohen, Everitt 1969), 1 - kappa = 0.6:
    #   diagonal  0.4 (1 - 1.1*0.6)^2 + 0.3 (1 - 0.9*0.6)^2 = 0.04624 + 0.06348 = 0.10972
    #   off       0.36 * (0.1 * 1.1^2 + 0.2 * 0.9^2) = 0.36 * 0.283 = 0.10188
    #   minus     (0.4 - 0.5*0.6)^2 = 0.01
    #   / (50 * 0.25): (0.10972 + 0.10188 - 0.01) / 12.5 = 0.016128, se = 0.126996
    result = kappa_from_table([[20, 5], [10, 15]])

    assert result.n == 50
    assert result.observed == pytest.approx(0.7)
    assert result.expected == pytest.approx(0.5)
    assert result.kappa == pytest.approx(0.4)
    assert result.se == pytest.approx(0.126996, abs=1e-6)
    assert result.low == pytest.approx(0.4 - 1.959964 * 0.126996, abs=1e-5)  # 0.151091
    assert result.high == pytest.approx(0.648909, abs=1e-5)
    assert not result.small


def test_a_three_category_table_worked_by_hand():
    # no_claim / guaranteed_returns / risk_free, 10 pairs:
    #   [[4, 1, 0], [0, 3, 0], [0, 1, 1]]: p_o = 8/10; rows .5 .3 .2; columns .4 .5 .1;
    #   p_e = .2 + .15 + .02 = .37; kappa = (.8 - .37) / .63 = 0.682540
    result = kappa_from_table([[4, 1, 0], [0, 3, 0], [0, 1, 1]])

    assert result.kappa == pytest.approx(0.43 / 0.63)
    assert result.small  # 10 pairs < MIN_PAIRS
    assert -1.0 <= result.low < result.kappa < result.high <= 1.0


def test_perfect_agreement_has_kappa_one_and_no_spread_and_chance_agreement_kappa_zero():
    perfect = kappa_from_table([[3, 0], [0, 2]])
    chance = kappa_from_table([[1, 1], [1, 1]])

    assert (perfect.kappa, perfect.se, perfect.low, perfect.high) == (1.0, 0.0, 1.0, 1.0)
    assert chance.kappa == pytest.approx(0.0)


def test_no_pairs_or_one_label_for_everything_gives_no_kappa_rather_than_a_number():
    assert cohen_kappa([]).kappa is None
    same = cohen_kappa([("no_claim", "no_claim")] * 5)
    assert same.kappa is None and same.observed == 1.0 and same.n == 5


def test_percent_agreement_is_the_share_of_identical_labels_with_its_wilson_interval():
    # Wilson, 35 of 50, z^2 = 3.8415: centre (0.7 + 0.038415) / 1.076829 = 0.685730,
    # half 1.820124 * sqrt(0.21/50 + 0.000384) = 0.123234: [0.562496, 0.808964]
    agreement = percent_agreement(pairs_of([[20, 5], [10, 15]], ["claim", "no"]))

    assert (agreement.successes, agreement.n, agreement.rate) == (35, 50, 0.7)
    assert agreement.low == pytest.approx(0.562496, abs=1e-5)
    assert agreement.high == pytest.approx(0.808964, abs=1e-5)


def test_the_confusion_table_puts_the_first_label_in_rows():
    labels, table = confusion([("a", "b"), ("a", "b"), ("b", "b")])

    assert labels == ["a", "b"] and table == [[0, 2], [0, 1]]
    with pytest.raises(ValueError, match="not in"):
        confusion([("a", "c")], labels=["a", "b"])


@pytest.mark.parametrize("seed", range(5))
def test_kappa_matches_scikit_learn_on_random_reviews(seed):
    rng = random.Random(seed)
    labels = ["no_claim", "guaranteed_returns", "risk_free", "performance_forecast", "regulatory_endorsement"]
    first = [rng.choice(labels) for _ in range(200)]
    # the second reviewer agrees most of the time, otherwise picks anything
    second = [label if rng.random() < 0.7 else rng.choice(labels) for label in first]

    ours = cohen_kappa(list(zip(first, second, strict=True)))

    assert ours.kappa == pytest.approx(cohen_kappa_score(first, second), abs=1e-12)
    assert ours.n == 200 and ours.n >= MIN_PAIRS
