"""The monitoring statistics against values worked by hand (z = 1.96 in the hand arithmetic;
the code uses z = 1.959964, hence the tolerances)."""

from __future__ import annotations

import math

import pytest

from monitoring import stats

TOL = 5e-4


def close(actual: float | None, expected: float, tol: float = TOL) -> bool:
    return actual is not None and abs(actual - expected) <= tol


# --- Wilson --------------------------------------------------------------------------------------


def test_wilson_interval_of_5_in_100_matches_the_hand_computation():
    # p = 0.05, z² = 3.8416, 1 + z²/n = 1.038416
    # centre = (0.05 + 3.8416/200) / 1.038416 = 0.069208 / 1.038416 = 0.066648
    # half   = 1.96/1.038416 * sqrt(0.05*0.95/100 + 3.8416/40000) = 1.887491 * 0.023897 = 0.045105
    low, high = stats.wilson_interval(5, 100)
    assert close(low, 0.021543)
    assert close(high, 0.111753)


def test_wilson_interval_at_zero_successes_is_not_degenerate():
    # p = 0: centre = half = (z²/2n)/(1 + z²/n) -> low 0, high = (z²/n)/(1 + z²/n) = 0.38416/1.38416
    low, high = stats.wilson_interval(0, 10)
    assert low == 0.0
    assert close(high, 0.277533)


def test_wilson_interval_at_all_successes_mirrors_zero():
    low, high = stats.wilson_interval(10, 10)
    assert close(low, 1 - 0.277533)
    assert high == 1.0


def test_wilson_interval_of_nothing_is_none_and_bad_counts_are_refused():
    assert stats.wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match="cannot exceed"):
        stats.wilson_interval(3, 2)
    with pytest.raises(ValueError, match=">= 0"):
        stats.wilson_interval(-1, 2)


def test_rate_carries_count_rate_and_interval_and_is_empty_at_zero():
    r = stats.rate(5, 100)
    assert (r.successes, r.n, r.rate) == (5, 100, 0.05)
    assert close(r.low, 0.021543) and close(r.high, 0.111753)
    empty = stats.rate(0, 0)
    assert (empty.rate, empty.low, empty.high) == (None, None, None)


# --- Newcombe difference and the alert rule -----------------------------------------------------------


def test_rate_difference_of_12_in_100_against_35_in_700():
    # Wilson(12/100) = [0.069996, 0.198120]; Wilson(35/700) = [0.036168, 0.068744]
    # low = 0.07 - sqrt((0.12 - 0.069996)² + (0.068744 - 0.05)²) = 0.07 - 0.053402 = 0.016598
    # high = 0.07 + sqrt((0.198120 - 0.12)² + (0.05 - 0.036168)²) = 0.07 + 0.079335 = 0.149335
    d = stats.rate_difference(12, 100, 35, 700)
    assert close(d.difference, 0.07, 1e-12)
    assert close(d.low, 0.016598)
    assert close(d.high, 0.149335)


def test_alert_fires_when_the_period_is_above_the_reference_beyond_both_intervals():
    check = stats.alert_check(12, 100, 35, 700)
    assert check.fires
    assert close(check.difference.low, 0.016598)


def test_alert_does_not_fire_for_a_rise_within_the_intervals():
    # Wilson(8/100) = [0.041095, 0.149979]: low = 0.03 - sqrt(0.038905² + 0.018744²) = -0.013185
    check = stats.alert_check(8, 100, 35, 700)
    assert not check.fires
    assert close(check.difference.low, -0.013185)


def test_alert_needs_minimum_counts_in_the_period_and_the_reference():
    assert not stats.alert_check(4, 4, 0, 1000).fires  # 100 % of 4 is still too few
    assert "too few" in stats.alert_check(4, 4, 0, 1000).reason
    small_reference = stats.alert_check(50, 50, 0, 9)
    assert not small_reference.fires and "reference too small" in small_reference.reason


def test_alert_fires_on_a_constructed_rise_and_never_on_noise_around_the_reference():
    reference = (50, 1000)  # 5 %
    noise = [4, 6, 5, 7, 3, 5, 6, 4, 8, 2]  # per 100: every period within ordinary variation of 5 %
    rise = [5, 6, 14, 20, 25]
    assert not any(stats.alert_check(x, 100, *reference).fires for x in noise)
    assert [stats.alert_check(x, 100, *reference).fires for x in rise] == [False, False, True, True, True]


# --- Histograms and PSI --------------------------------------------------------------------------------


def test_psi_of_a_shift_between_two_bins_matches_the_hand_computation():
    # (0.25 - 0.5) ln(0.25/0.5) + (0.75 - 0.5) ln(0.75/0.5) = 0.173287 + 0.101366
    assert close(stats.psi([50, 50], [25, 75]), 0.274653, 1e-6)


def test_psi_floors_an_empty_bin_at_epsilon():
    # third bin: (0.1 - 1e-4) ln(0.1 / 1e-4) = 0.0999 * 6.907755 = 0.690085
    # second bin: (0.4 - 0.5) ln(0.8) = 0.022314; first bin: 0
    assert close(stats.psi([5, 5, 0], [5, 4, 1]), 0.712399, 1e-6)


def test_psi_of_identical_distributions_is_zero_and_of_nothing_is_none():
    assert stats.psi([1, 2, 3], [10, 20, 30]) == pytest.approx(0.0)
    assert stats.psi([0, 0], [1, 2]) is None
    with pytest.raises(ValueError, match="same bins"):
        stats.psi([1, 2], [1, 2, 3])


def test_bins_are_closed_on_the_left():
    edges = [10, 20]
    assert [stats.bin_index(v, edges) for v in (9.99, 10, 19, 20, 1000)] == [0, 1, 1, 2, 2]
    assert stats.histogram([1, 10, 15, 20, 25], edges) == [1, 2, 2]


def test_quantile_interpolates_between_closest_ranks():
    assert stats.quantile([1, 2, 3, 4], 0.5) == 2.5  # h = 1.5
    assert close(stats.quantile([1, 2, 3, 4], 0.99), 3.97, 1e-12)  # h = 2.97
    assert stats.quantile([7], 0.99) == 7


def test_length_reference_has_p99_deduplicated_decile_edges_and_proportions():
    ref = stats.length_reference([10] * 5 + [20] * 5, bins=2)
    # median: h = 4.5 between x[4] = 10 and x[5] = 20 -> 15; p99: h = 8.91, both neighbours 20
    assert ref.edges == [15.0] and ref.p99 == 20.0 and ref.proportions == [0.5, 0.5]
    lumpy = stats.length_reference([5] * 100)
    assert lumpy.edges == [5.0] and lumpy.proportions == [0.0, 1.0]


def test_score_edges_are_increasing_and_symmetric_around_one_half():
    edges = stats.SCORE_EDGES
    assert len(edges) == 19 and list(edges) == sorted(edges)
    assert edges[9] == 0.5
    assert close(edges[0], 1 / (1 + math.exp(9)), 1e-12)
    assert close(edges[0] + edges[-1], 1.0, 1e-12)


# --- Recall estimator -----------------------------------------------------------------------------------


def test_recall_estimate_scales_each_stratum_and_takes_its_interval_from_the_qa_sample():
    # caught 80 of 100 flagged; rule hits 2 of 10; QA 1 of 50 reviewed out of 1000 below threshold
    # all claims = 80 + 2 + 1000 * 1/50 = 102 -> recall 80/102 = 0.784314
    # Wilson(1/50) = [0.003540, 0.104956] -> recall in [80/(82 + 104.956), 80/(82 + 3.540)]
    estimate = stats.recall_estimate(
        flagged=stats.Stratum(100, 100, 80),
        rule_only=stats.Stratum(10, 10, 2),
        qa=stats.Stratum(1000, 50, 1),
    )
    assert close(estimate.recall, 0.784314, 1e-6)
    assert close(estimate.estimated_claims, 102.0, 1e-9)
    assert close(estimate.low, 0.427910, 2e-3)
    assert close(estimate.high, 0.935235, 2e-3)


def test_messages_sent_to_review_for_a_part_not_read_are_scaled_as_a_stratum_of_their_own():
    # rule hits: all 100 reviewed, 30 claims; parts not read: 10 of 100 reviewed (the queue takes
    # them last), no claim. Apart: 30 + 0 claims below threshold with a rule or a part not read;
    # pooled, 100 + 100 messages at 30/110 would have been 54.5.
    estimate = stats.recall_estimate(
        flagged=stats.Stratum(70, 70, 70),
        rule_only=stats.Stratum(100, 100, 30),
        qa=stats.Stratum(1000, 50, 0),
        unread=stats.Stratum(100, 10, 0),
    )
    assert close(estimate.estimated_claims, 100.0, 1e-9)
    assert close(estimate.recall, 0.7, 1e-9)
    # the 90 not reviewed are not a random draw: the interval holds them at their bounds, none a
    # claim (best) or every one (worst), besides the QA sample's Wilson upper end (0 of 50)
    qa_high = stats.wilson_interval(0, 50)[1]
    assert close(estimate.low, 70 / (70 + 30 + 0 + 90 + 1000 * qa_high), 1e-9)
    assert close(estimate.high, 0.7, 1e-9)
    assert "90 messages with a part not read not reviewed yet" in estimate.reason
    # none reviewed yet: recall is still estimated, with the claims seen (none) and the bounds
    not_yet = stats.recall_estimate(
        flagged=stats.Stratum(70, 70, 70),
        rule_only=stats.Stratum(100, 100, 30),
        qa=stats.Stratum(1000, 50, 0),
        unread=stats.Stratum(3, 0, 0),
    )
    assert close(not_yet.recall, 0.7, 1e-9)
    assert close(not_yet.low, 70 / (70 + 30 + 3 + 1000 * qa_high), 1e-9)
    assert "3 messages with a part not read" in not_yet.reason
    # all reviewed (a census): no interval of their own
    census = stats.recall_estimate(
        flagged=stats.Stratum(70, 70, 70),
        rule_only=stats.Stratum(0, 0, 0),
        qa=stats.Stratum(30, 30, 0),
        unread=stats.Stratum(10, 10, 10),
    )
    assert close(census.recall, 0.875, 1e-9) and census.low == census.high == census.recall


def test_recall_estimate_scales_up_a_partly_reviewed_flagged_stratum():
    # half the flagged reviewed: 40 of 50 claims -> 80 estimated among 100
    estimate = stats.recall_estimate(
        flagged=stats.Stratum(100, 50, 40), rule_only=stats.Stratum(0, 0, 0), qa=stats.Stratum(100, 10, 0)
    )
    assert estimate.recall == 1.0
    assert estimate.high == 1.0
    # Wilson(0/10) high 0.277533 -> worst case 27.75 missed claims: 80 / 107.75
    assert close(estimate.low, 80 / (80 + 27.7533), 1e-3)


def test_recall_estimate_says_why_it_cannot_be_estimated():
    no_qa = stats.recall_estimate(
        flagged=stats.Stratum(10, 10, 9), rule_only=stats.Stratum(0, 0, 0), qa=stats.Stratum(500, 0, 0)
    )
    assert no_qa.recall is None and "below-threshold" in no_qa.reason
    no_claims = stats.recall_estimate(
        flagged=stats.Stratum(10, 10, 0), rule_only=stats.Stratum(0, 0, 0), qa=stats.Stratum(500, 20, 0)
    )
    assert no_claims.recall is None and "no claims" in no_claims.reason
    with pytest.raises(ValueError):
        stats.Stratum(10, 5, 6)


def test_a_fully_reviewed_below_threshold_stratum_leaves_no_interval():
    # a census: 12 claims among all 12 messages below threshold; Wilson(12/12) alone would say
    # the share could be 0.757, i.e. 9 missed claims, but 12 were seen
    estimate = stats.recall_estimate(
        flagged=stats.Stratum(48, 48, 48), rule_only=stats.Stratum(0, 0, 0), qa=stats.Stratum(12, 12, 12)
    )
    assert estimate.recall == estimate.low == estimate.high == 0.8
