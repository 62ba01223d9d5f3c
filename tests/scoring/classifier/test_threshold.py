import pytest

from scoring.classifier.threshold import choose_threshold, describe_rule


def recall_at(threshold, scores, labels):
    positives = [s for s, y in zip(scores, labels, strict=True) if y == 1]
    return sum(s >= threshold for s in positives) / len(positives)


def test_the_threshold_is_the_highest_that_keeps_the_target_recall():
    # 20 claims scored 0.05 .. 1.00, negatives in between
    claims = [i / 20 for i in range(1, 21)]
    scores = [*claims, 0.5, 0.9, 0.1]
    labels = [1] * 20 + [0, 0, 0]

    threshold = choose_threshold(scores, labels, target_recall=0.95)

    assert threshold == pytest.approx(0.10)  # 19 of 20 claims are >= 0.10
    assert recall_at(threshold, scores, labels) >= 0.95
    assert recall_at(threshold + 1e-9, scores, labels) < 0.95


def test_a_perfect_recall_target_keeps_every_claim():
    scores = [0.2, 0.9, 0.4, 0.3]
    labels = [1, 1, 0, 1]

    assert choose_threshold(scores, labels, target_recall=1.0) == pytest.approx(0.2)


def test_ties_at_the_threshold_are_all_flagged():
    scores = [0.7, 0.7, 0.7, 0.1]
    labels = [1, 1, 1, 1]

    threshold = choose_threshold(scores, labels, target_recall=0.5)

    assert threshold == pytest.approx(0.7)
    assert recall_at(threshold, scores, labels) == pytest.approx(0.75)


def test_without_claims_no_threshold_can_be_chosen():
    with pytest.raises(ValueError, match="no claims"):
        choose_threshold([0.1, 0.2], [0, 0])


@pytest.mark.parametrize("target", [0.0, -0.1, 1.01])
def test_a_target_outside_zero_one_is_refused(target):
    with pytest.raises(ValueError, match="target_recall"):
        choose_threshold([0.5], [1], target_recall=target)


def test_the_rule_is_described_with_its_target():
    assert "recall >= 0.97" in describe_rule(0.97)
    assert "validation" in describe_rule()


def test_every_claim_type_must_reach_the_target_on_its_own():
    # Overall 18 of 20 claims score >= 0.7, but type b's four claims include two low ones.
    scores = [0.9] * 16 + [0.8, 0.7, 0.3, 0.2, 0.1]
    labels = [1] * 20 + [0]
    types = ["a"] * 16 + ["b", "b", "b", "b", None]

    overall_only = choose_threshold(scores, labels, target_recall=0.9)
    per_type = choose_threshold(scores, labels, target_recall=0.9, claim_types=types)

    assert overall_only == pytest.approx(0.7)  # 18 of 20 overall
    assert per_type == pytest.approx(0.2)  # type b needs all four of its claims for 0.9
    b_scores = scores[16:20]
    assert sum(s >= per_type for s in b_scores) / 4 >= 0.9


def test_a_type_floor_below_the_target_asks_less_of_each_type_than_of_all_claims():
    # Type a: ten claims at 0.9, 0.8, ..., 0.0; type b: ten claims at 0.95. Overall 0.90 of the 20
    # claims is 18: down to a's eighth claim (0.2). A floor of 0.90 per type needs a's ninth
    # (0.1); a floor of 0.80 keeps the overall one, and 0.50 cannot ask more than the overall.
    a = [round(0.9 - 0.1 * i, 1) for i in range(10)]
    scores = a + [0.95] * 10 + [0.5]
    labels = [1] * 20 + [0]
    types = ["a"] * 10 + ["b"] * 10 + [None]

    def rule(floor):
        return choose_threshold(scores, labels, target_recall=0.9, claim_types=types, type_floor=floor)

    assert rule(None) == rule(0.9) == pytest.approx(0.1)
    assert rule(0.8) == pytest.approx(0.2)
    assert rule(0.5) == pytest.approx(0.2)
    assert rule(0.85) == pytest.approx(0.1)  # 8.5 of a's ten round up to nine: here the floor binds


@pytest.mark.parametrize("floor", [0.0, 0.95, -1.0])
def test_a_type_floor_outside_zero_to_the_target_is_refused(floor):
    with pytest.raises(ValueError, match="type_floor"):
        choose_threshold([0.5, 0.6], [1, 1], target_recall=0.9, type_floor=floor)


def test_the_rule_names_the_floor_when_it_is_below_the_target():
    assert "overall and >= 0.80 for each claim type" in describe_rule(0.9, 0.8)
    assert "overall and for each claim type" in describe_rule(0.9, 0.9)


def test_claim_types_must_line_up_with_the_labels():
    with pytest.raises(ValueError, match="claim types"):
        choose_threshold([0.5, 0.6], [1, 1], claim_types=["a"])


def test_the_rule_names_the_per_type_condition():
    assert "each claim type" in describe_rule()
