"""The faithfulness check on toy models whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from explanations.agreement import rule_agreement, spearman, token_f1
from explanations.faithfulness import (
    K_MAX,
    PASS_MARGIN,
    PASS_RULE,
    PASS_SHARE,
    RANDOM_DRAWS,
    CheckInput,
    batch_faithfulness_checks,
    beaten_share,
    beats_the_mean,
    faithfulness_check,
    k_for,
    passes,
    top_k,
    verdict,
)
from explanations.words import Word, delete_words, keep_only, split_words

TEXT = "Our fund offers guaranteed returns to every client this year"
WORDS = split_words(TEXT)  # 10 words, so k = 2
THRESHOLD = 0.62


class CountingScorer:
    """p = 0.95 when the text still contains the word "guaranteed", else 0.05; counts calls."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> list[float]:
        self.calls.append(list(texts))
        return [0.95 if "guaranteed" in text.lower().split() else 0.05 for text in texts]


def scores_ranking(first: str, second: str) -> list[float]:
    return [3.0 if w.text == first else 2.0 if w.text == second else 0.1 * i for i, w in enumerate(WORDS)]


# --- words, deletion, k ---------------------------------------------------------------------


def test_split_words_keeps_contractions_hyphens_amounts_and_offsets():
    text = "It's a risk-free 8% deal: $200 or 1,000.50 units.End"
    words = split_words(text)
    assert [w.text for w in words] == [
        "It's",
        "a",
        "risk-free",
        "8%",
        "deal",
        "$200",
        "or",
        "1,000.50",
        "units",
        "End",
    ]
    assert all(text[w.start : w.end] == w.text for w in words)


@pytest.mark.parametrize(
    ("remove", "expected"),
    [
        ({3}, "Your returns are today."),
        ({4}, "Your returns are guaranteed."),
        ({0}, "returns are guaranteed today."),
        ({2, 3}, "Your returns today."),
        ({3, 4}, "Your returns are."),
        ({0, 1, 2, 3, 4}, "."),
        (set(), "Your returns are guaranteed today."),
    ],
)
def test_deleting_words_re_joins_the_rest_without_stray_spaces(remove, expected):
    text = "Your returns are guaranteed today."
    assert delete_words(text, split_words(text), remove) == expected


def test_deleting_keeps_line_breaks_and_punctuation_between_kept_words():
    text = "Hi Ann,\nreturns are guaranteed!\nBest"
    assert delete_words(text, split_words(text), {4}) == "Hi Ann,\nreturns are!\nBest"
    assert delete_words(text, split_words(text), {0}) == "Ann,\nreturns are guaranteed!\nBest"


def test_deleting_the_only_word_leaves_an_empty_text():
    assert delete_words("guaranteed", split_words("guaranteed"), {0}) == ""


def test_keep_only_joins_the_chosen_words_in_text_order():
    assert keep_only(TEXT, WORDS, [4, 3]) == "guaranteed returns"


def test_deletion_refuses_indices_or_words_that_do_not_fit_the_text():
    with pytest.raises(ValueError, match="out of range"):
        delete_words(TEXT, WORDS, {10})
    with pytest.raises(ValueError, match="outside the text"):
        delete_words("short", [Word("short", 0, 99)], {0})


@pytest.mark.parametrize(
    ("n", "k"), [(1, 1), (3, 1), (5, 1), (6, 2), (10, 2), (11, 3), (50, 10), (51, 10), (5000, 10)]
)
def test_k_is_twenty_percent_of_the_words_at_least_one_at_most_ten(n, k):
    assert k_for(n) == k
    assert 1 <= k_for(n) <= min(n, K_MAX)


def test_k_is_undefined_for_a_text_without_words():
    with pytest.raises(ValueError):
        k_for(0)


def test_top_k_ranks_by_score_and_breaks_ties_by_position():
    assert top_k([0.1, 0.9, 0.5, 0.9], 3) == [1, 3, 2]
    with pytest.raises(ValueError):
        top_k([0.1, float("nan")], 1)


# --- the check ------------------------------------------------------------------------------


def test_an_attribution_that_names_the_word_the_model_reads_passes_with_a_flip():
    score_fn = CountingScorer()
    result = faithfulness_check(
        text=TEXT,
        words=WORDS,
        scores=scores_ranking("guaranteed", "returns"),
        score_fn=score_fn,
        threshold=THRESHOLD,
    )
    assert result.k == 2
    assert [w.text for w in result.top_words] == ["guaranteed", "returns"]
    assert [(w.start, w.end) for w in result.top_words] == [(16, 26), (27, 34)]
    assert (result.score_full, result.score_without_top, result.score_top_only) == (0.95, 0.05, 0.95)
    assert result.comprehensiveness == pytest.approx(0.90)
    assert result.sufficiency == pytest.approx(0.0)
    assert result.flipped and result.passed
    assert result.beaten_by_random == 0.0  # no draw of 2 words drops it further
    assert result.pass_rule == PASS_RULE
    assert result.verdict_text == (
        "Removing 'guaranteed', 'returns' drops the score from 0.95 to 0.05, below the threshold 0.62 "
        f"(random words: {0.95 - result.random_baseline:.2f})."
    )
    assert len(score_fn.calls) == 1


def test_an_attribution_that_misses_the_word_fails_and_says_so_with_the_numbers():
    result = faithfulness_check(
        text=TEXT,
        words=WORDS,
        scores=scores_ranking("client", "year"),
        score_fn=CountingScorer(),
        threshold=THRESHOLD,
    )
    assert not result.flipped and not result.passed
    assert result.comprehensiveness == pytest.approx(0.0)
    # RANDOM_DRAWS seeded draws of 2 of the 10 words; a draw that takes "guaranteed" drops 0.90.
    drawn = sum(c > 0 for c in result.random_comprehensiveness)
    assert result.random_baseline == pytest.approx(0.90 * drawn / RANDOM_DRAWS)
    assert result.beaten_by_random == pytest.approx(drawn / RANDOM_DRAWS)
    assert result.verdict_text == (
        "Removing 'client', 'year' moves the score from 0.95 to 0.95, and removing as many random words "
        f"does nearly as much or more on average (random words: {0.95 - result.random_baseline:.2f}): the "
        "highlight does not explain the flag."
    )


def test_random_attributions_pass_exactly_when_they_happen_to_name_the_word():
    rng = np.random.default_rng(123)
    outcomes = []
    for _ in range(30):
        result = faithfulness_check(
            text=TEXT,
            words=WORDS,
            scores=rng.normal(size=10).tolist(),
            score_fn=CountingScorer(),
            threshold=THRESHOLD,
        )
        named = "guaranteed" in [w.text for w in result.top_words]
        assert result.passed == named
        outcomes.append(named)
    assert 0 < sum(outcomes) < 15  # mostly failing, as a random highlight should


def test_a_drop_that_beats_random_by_the_margin_passes_without_a_flip():
    # Below-threshold message (routed by a rule): no flip possible, the margin decides.
    def score_fn(texts):
        return [0.10 + 0.40 * ("guaranteed" in t.split()) for t in texts]

    result = faithfulness_check(
        text=TEXT,
        words=WORDS,
        scores=scores_ranking("guaranteed", "returns"),
        score_fn=score_fn,
        threshold=THRESHOLD,
    )
    assert not result.flipped
    assert result.comprehensiveness == pytest.approx(0.40)
    assert result.comprehensiveness >= result.random_baseline + PASS_MARGIN
    assert result.passed
    assert result.verdict_text.startswith(
        "Removing 'guaranteed', 'returns' lowers the score from 0.50 to 0.10"
    )
    assert "already below the threshold 0.62" in result.verdict_text


def test_the_pass_rule_is_beating_the_random_mean_by_the_margin_and_nearly_every_random_draw():
    # the margin over the draws' mean
    assert passes(comprehensiveness=0.3, random_comprehensiveness=[0.3 - PASS_MARGIN] * 20)
    assert not passes(comprehensiveness=0.3, random_comprehensiveness=[0.3 - PASS_MARGIN + 0.01] * 20)
    # and at most PASS_SHARE of the draws drop the score further (mean 0.09 and 0.135: the margin holds)
    assert PASS_SHARE == 0.10
    assert passes(comprehensiveness=0.5, random_comprehensiveness=[0.0] * 18 + [0.9] * 2)
    assert beaten_share(0.5, [0.0] * 17 + [0.9] * 3) == pytest.approx(0.15)
    assert not passes(comprehensiveness=0.5, random_comprehensiveness=[0.0] * 17 + [0.9] * 3)
    # a draw that drops it exactly as much (the same words) does not beat it
    assert beaten_share(0.5, [0.5] * 5 + [0.0] * 15) == 0.0
    with pytest.raises(ValueError):
        beaten_share(0.5, [])
    with pytest.raises(ValueError):
        beaten_share(float("nan"), [0.0])
    assert f"{PASS_MARGIN:.2f}" in PASS_RULE and "a flip of the decision alone does not pass" in PASS_RULE
    assert f"no more than 10 % of {RANDOM_DRAWS} seeded random deletions lower it further" in PASS_RULE
    assert len(PASS_RULE) <= 300  # stored with each explanation


def test_a_flip_that_deleting_any_word_causes_does_not_pass():
    # A short claim just above the threshold: deleting any one word takes it under, so a flip says
    # nothing about which words carry the claim, and the highlight is no better than random words.
    text = "returns guaranteed forever"

    def score_fn(texts):
        return [0.65 if len(t.split()) == 3 else 0.55 for t in texts]

    result = faithfulness_check(
        text=text, words=split_words(text), scores=[0.1, 0.9, 0.2], score_fn=score_fn, threshold=THRESHOLD
    )
    assert result.k == 1 and result.flipped
    assert result.comprehensiveness == pytest.approx(result.random_baseline)
    assert not result.passed
    assert result.verdict_text == (
        "Removing 'guaranteed' drops the score from 0.65 to 0.55, below the threshold 0.62, but "
        "removing as many random words does nearly as much or more on average (random words: 0.55): "
        "the highlight is not told apart from random words."
    )


def test_aopc_averages_comprehensiveness_over_the_fractions_worked_by_hand():
    # p = 0.5 + 0.3 [alpha] + 0.1 [beta] + 0.05 [gamma]; 10 words; full p = 0.95.
    # k per fraction: 1 % -> 1, 5 % -> 1, 10 % -> 1, 20 % -> 2, 50 % -> 5 (ceil, at least 1).
    # Deleting the top 1 (alpha) drops 0.30; top 2 (alpha, beta) 0.40; top 5 0.45.
    # AOPC = (0.30 + 0.30 + 0.30 + 0.40 + 0.45) / 5 = 0.35
    text = "alpha beta gamma w3 w4 w5 w6 w7 w8 w9"
    weight = {"alpha": 0.3, "beta": 0.1, "gamma": 0.05}

    def score_fn(texts):
        return [0.5 + sum(weight.get(w, 0.0) for w in t.split()) for t in texts]

    words = split_words(text)
    result = faithfulness_check(
        text=text, words=words, scores=[9, 8, 7, 6, 5, 4, 3, 2, 1, 0], score_fn=score_fn, threshold=0.5
    )
    assert [(p.fraction, p.k) for p in result.aopc_curve] == [
        (0.01, 1),
        (0.05, 1),
        (0.10, 1),
        (0.20, 2),
        (0.50, 5),
    ]
    assert [p.comprehensiveness for p in result.aopc_curve] == pytest.approx([0.30, 0.30, 0.30, 0.40, 0.45])
    assert result.aopc == pytest.approx(0.35)


def test_the_random_baseline_is_reproducible_for_a_seed_and_changes_with_it():
    text = "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9"

    def score_fn(texts):  # each word carries its own weight, so every draw scores differently
        return [sum(int(w[1]) for w in t.split()) / 45 for t in texts]

    def check(seed):
        return faithfulness_check(
            text=text,
            words=split_words(text),
            scores=list(range(10)),
            score_fn=score_fn,
            threshold=0.5,
            seed=seed,
        )

    assert check(0).random_comprehensiveness == check(0).random_comprehensiveness
    assert check(0).random_comprehensiveness != check(1).random_comprehensiveness
    assert len(check(0).random_comprehensiveness) == RANDOM_DRAWS == 20


def test_a_batch_of_messages_is_scored_with_one_call_and_matches_single_checks():
    texts = [TEXT, "The SEC filing is attached", "guaranteed"]
    items = [
        CheckInput(
            text=t, words=split_words(t), scores=list(range(len(split_words(t))))[::-1], threshold=THRESHOLD
        )
        for t in texts
    ]
    score_fn = CountingScorer()
    results = batch_faithfulness_checks(items, score_fn)
    assert len(score_fn.calls) == 1
    scored = score_fn.calls[0]
    assert len(scored) == len(set(scored))  # every distinct variant once
    assert "" in scored  # the one-word message without its word
    for item, result in zip(items, results, strict=True):
        single = faithfulness_check(
            text=item.text,
            words=item.words,
            scores=item.scores,
            score_fn=CountingScorer(),
            threshold=THRESHOLD,
        )
        assert result == single


def test_an_empty_batch_does_not_call_the_model():
    score_fn = CountingScorer()
    assert batch_faithfulness_checks([], score_fn) == []
    assert score_fn.calls == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scores": [1.0, 2.0]}, "10 words but 2 scores"),
        ({"threshold": 1.5}, "threshold"),
        ({"words": [], "scores": []}, "without words"),
    ],
)
def test_bad_input_is_refused_before_the_model_is_called(kwargs, message):
    score_fn = CountingScorer()
    args = {"text": TEXT, "words": WORDS, "scores": [0.0] * 10, "threshold": THRESHOLD, **kwargs}
    with pytest.raises(ValueError, match=message):
        faithfulness_check(score_fn=score_fn, **args)
    assert score_fn.calls == []


def test_a_score_function_that_returns_the_wrong_number_of_scores_is_an_error():
    with pytest.raises(ValueError, match="returned 1 scores"):
        faithfulness_check(text=TEXT, words=WORDS, scores=[0.0] * 10, score_fn=lambda t: [0.5], threshold=0.5)
    with pytest.raises(ValueError, match=r"within \[0, 1\]"):
        faithfulness_check(
            text=TEXT,
            words=WORDS,
            scores=[0.0] * 10,
            score_fn=lambda t: [float("nan")] * len(t),
            threshold=0.5,
        )


def test_the_result_serialises_to_json_ready_data():
    result = faithfulness_check(
        text=TEXT,
        words=WORDS,
        scores=scores_ranking("guaranteed", "returns"),
        score_fn=CountingScorer(),
        threshold=0.62,
    )
    data = result.as_dict()
    assert data["top_words"][0] == {"word": "guaranteed", "start": 16, "end": 26, "score": 3.0}
    assert data["aopc_curve"][0]["k"] == 1
    assert data["passed"] is True and data["verdict_text"] == result.verdict_text


# --- comparisons ----------------------------------------------------------------------------


def test_rule_agreement_is_whether_a_top_word_lies_in_a_rule_hit():
    rule_span = (16, 34)  # "guaranteed returns"
    assert rule_agreement([WORDS[3]], [rule_span]) is True
    assert rule_agreement([WORDS[0], WORDS[9]], [rule_span]) is False
    assert rule_agreement([WORDS[3]], []) is None


def test_token_f1_worked_by_hand():
    text = "Our fund offers guaranteed returns today"
    rationale = [(16, 34)]  # "guaranteed returns": 2 gold words
    # one right word: P = 1, R = 1/2, F1 = 2 * 1 * 0.5 / 1.5 = 2/3
    assert token_f1([(16, 26)], rationale, text) == pytest.approx(2 / 3)
    # three words, two right: P = 2/3, R = 1, F1 = 0.8
    assert token_f1(split_words(text)[3:6], rationale, text) == pytest.approx(0.8)
    assert token_f1([(0, 3)], rationale, text) == 0.0
    assert token_f1([(16, 26)], [], text) is None


def test_spearman_compares_two_attributions_of_the_same_words():
    assert spearman([0.1, 0.5, 0.9], [1, 2, 30]) == pytest.approx(1.0)
    assert spearman([0.1, 0.5, 0.9], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) is None
    with pytest.raises(ValueError):
        spearman([1, 2], [1, 2, 3])


def test_a_highlight_that_beats_the_mean_but_not_enough_draws_is_told_how_many_beat_it():
    # 3 of 20 draws took both of a claim's two words and dropped the score further: the margin
    # over the draws' mean holds, the share does not (see the pass-rule test for the numbers).
    draws = [0.0] * 17 + [0.9] * 3
    assert beats_the_mean(0.5, draws) and not passes(comprehensiveness=0.5, random_comprehensiveness=draws)
    text = verdict(
        top_words=[Word("guaranteed", 16, 26), Word("Our", 0, 3)],
        score_full=0.95,
        score_without_top=0.45,
        score_without_random=0.95 - 0.135,
        threshold=THRESHOLD,
        flipped=True,
        passed=False,
        beaten_by_random=beaten_share(0.5, draws),
        beats_mean=True,
    )
    assert text == (
        "Removing 'guaranteed', 'Our' drops the score from 0.95 to 0.45, below the threshold 0.62, but "
        "15% of the random deletions of as many words lower it further (on average random words: "
        "0.81): the highlight is not told apart from random words."
    )


def test_a_one_word_message_cannot_be_told_apart_from_random_words_and_says_so():
    result = faithfulness_check(
        text="guaranteed", words=split_words("guaranteed"), scores=[1.0], score_fn=CountingScorer(),
        threshold=THRESHOLD,
    )  # fmt: skip
    assert result.k == result.n_words == 1 and result.flipped and not result.passed
    assert result.verdict_text.startswith("The message is too short to test: 'guaranteed' are all its words")
