"""The faithfulness check: does deleting the words an attribution names move the model's score?

Pure functions (no Django, no torch): the model enters only as `score_fn(texts) -> scores`, its
claim probability for a batch of texts (pass the Scorer's batched path). Every variant text of
every message in a batch is built first and scored in ONE call.

Definitions (docs/explanations.md, "The faithfulness check"), with p the claim probability and
r the top-k attributed words:

- comprehensiveness = p(x) - p(x without r)    (higher is better)
- sufficiency       = p(x) - p(r alone)        (lower is better)
- flipped           = p(x) >= threshold and p(x without r) < threshold
- random baseline   = mean comprehensiveness of RANDOM_DRAWS seeded draws of k random words
- beaten by random  = the share of those draws whose comprehensiveness exceeds the top words'
- AOPC              = comprehensiveness averaged over k = 1, 5, 10, 20, 50 % of the words
                      (each k at least 1, the k top-ranked words each time)

Words are deleted and the rest re-joined as text (the caller re-tokenises); nothing is
replaced with [MASK]. `score_fn` must therefore accept texts that lost words, including an
empty text when every word is deleted (a one-word message).

k rule: k = ceil(20 % of the words), at least 1, at most 10 (K_PERCENT, K_MIN, K_MAX).
Pass rule: `passes()` below and its PASS_RULE text; nothing else decides "passed".

What a word is and how words are deleted: explanations.words. How the top words compare with
other evidence (rule hits, rationales, another version): explanations.agreement.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from explanations.words import Word, delete_words, keep_only

# --- the k rule -------------------------------------------------------------------------------
# An attribution "adds up" (IG's completeness) when |sum(attributions) - (F(x) - F(baseline))|
# is at most this, on the scale of the score (a probability).
IG_DELTA_TOLERANCE = 0.05


def converged(delta: float | None) -> bool | None:
    """Whether an attribution with this convergence delta adds up; None without a delta."""
    return None if delta is None else abs(delta) <= IG_DELTA_TOLERANCE


K_PERCENT = 20
K_MIN = 1
K_MAX = 10
# --- the check's parameters -------------------------------------------------------------------
RANDOM_DRAWS = 20
AOPC_FRACTIONS: tuple[float, ...] = (0.01, 0.05, 0.10, 0.20, 0.50)
# --- the pass rule ----------------------------------------------------------------------------
# Deleting the top-k words must beat deleting k random words in two ways: by at least PASS_MARGIN
# (probability points) over the random draws' mean, and by being beaten by at most PASS_SHARE of
# the draws themselves (a one-sided permutation test at that level). A flip of the decision is
# reported but does not pass on its own: with the threshold in the middle of the scale, deleting
# any k words of a short claim just above it flips it too (random words passed on about half the
# canaries under the earlier "flip or margin" rule; README, "The faithfulness check's rule").
PASS_MARGIN = 0.10
PASS_SHARE = 0.10
PASS_RULE = (
    "Passes when deleting the top-k attributed words lowers the score by at least "
    f"{PASS_MARGIN:.2f} more than deleting k random words does on average, and no more than "
    f"{PASS_SHARE * 100:.0f} % of {RANDOM_DRAWS} seeded random deletions lower it further; a flip "
    f"of the decision alone does not pass. k is {K_PERCENT} % of the words, at least {K_MIN}, at "
    f"most {K_MAX}."
)
# (stored with each explanation, at most 300 characters: explanations.models.Explanation.pass_rule)

ScoreFn = Callable[[list[str]], Sequence[float]]


def beaten_share(comprehensiveness: float, random_comprehensiveness: Sequence[float]) -> float:
    """The share of the random draws that lowered the score more than the top words did (a draw
    that deletes the same words lowers it exactly as much and does not count)."""
    draws = np.asarray(random_comprehensiveness, dtype=float)
    if draws.ndim != 1 or draws.size == 0:
        raise ValueError("the check needs at least one random draw")
    if not (math.isfinite(comprehensiveness) and np.isfinite(draws).all()):
        raise ValueError("comprehensiveness and the random draws must be finite numbers")
    return float(np.mean(draws > comprehensiveness + 1e-12))


def beats_the_mean(comprehensiveness: float, random_comprehensiveness: Sequence[float]) -> bool:
    """The rule's first half: the drop beats the random draws' mean by PASS_MARGIN."""
    return comprehensiveness >= float(np.mean(random_comprehensiveness)) + PASS_MARGIN - 1e-12


def passes(*, comprehensiveness: float, random_comprehensiveness: Sequence[float]) -> bool:
    """THE definition of a passed check (see PASS_RULE)."""
    few_beat_it = beaten_share(comprehensiveness, random_comprehensiveness) <= PASS_SHARE + 1e-12
    return few_beat_it and beats_the_mean(comprehensiveness, random_comprehensiveness)


# --- k and ranking ----------------------------------------------------------------------------


def _ceil_share(fraction: float, n: int) -> int:
    return math.ceil(round(fraction * n, 9))  # round: 0.2 * 5 must be 1, not 1.0000000000000002


def k_for(n_words: int) -> int:
    """The k rule: ceil(K_PERCENT % of the words), at least K_MIN, at most K_MAX, at most n."""
    if n_words < 1:
        raise ValueError("a text without words cannot be checked")
    return min(n_words, K_MAX, max(K_MIN, _ceil_share(K_PERCENT / 100, n_words)))


def top_k(scores: Sequence[float], k: int) -> list[int]:
    """Indices of the k highest attribution scores, highest first (ties: earlier word first).
    Positive scores push toward the claim, so the top is by value, not absolute value."""
    values = np.asarray(scores, dtype=float)
    if values.ndim != 1 or not np.isfinite(values).all():
        raise ValueError("scores must be a flat sequence of finite numbers")
    if not 1 <= k <= len(values):
        raise ValueError(f"k must be between 1 and {len(values)}, got {k}")
    return [int(i) for i in np.argsort(-values, kind="stable")[:k]]


# --- the check --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckInput:
    """One message (or the window of it that was explained) and its word attribution."""

    text: str
    words: Sequence[Word]
    scores: Sequence[float]
    threshold: float


@dataclass(frozen=True)
class AopcPoint:
    fraction: float
    k: int
    score_without: float
    comprehensiveness: float


@dataclass(frozen=True)
class FaithfulnessResult:
    """Every number of one check, the verdict, and the rule it was judged by."""

    n_words: int
    k: int
    top_indices: tuple[int, ...]
    top_words: tuple[Word, ...]
    top_scores: tuple[float, ...]
    threshold: float
    score_full: float
    score_without_top: float
    score_top_only: float
    comprehensiveness: float
    sufficiency: float
    flipped: bool
    random_baseline: float
    score_without_random: float
    random_comprehensiveness: tuple[float, ...]
    # the share of the random draws that lowered the score more than the top words did
    beaten_by_random: float
    # The same two drops on the log-odds scale, log(p / (1 - p)): a probability saturated near
    # 1.0 hides a large change of the model's evidence (0.999 -> 0.99 is 2.3 nats).
    comprehensiveness_log_odds: float
    random_baseline_log_odds: float
    aopc: float
    aopc_curve: tuple[AopcPoint, ...]
    passed: bool
    pass_rule: str
    verdict_text: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: words as {word, start, end, score}, the curve as a list of dicts."""
        data = asdict(self)
        data["top_words"] = [
            {"word": w.text, "start": w.start, "end": w.end, "score": s}
            for w, s in zip(self.top_words, self.top_scores, strict=True)
        ]
        data["top_indices"] = list(self.top_indices)
        data["random_comprehensiveness"] = list(self.random_comprehensiveness)
        data["aopc_curve"] = [asdict(point) for point in self.aopc_curve]
        del data["top_scores"]
        return data


class _Texts:
    """Variant texts of a whole batch, each distinct text stored once."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]


@dataclass
class _Plan:
    item: CheckInput
    k: int
    order: list[int]
    full: int
    without_top: int
    top_only: int
    random: list[int]
    aopc: list[tuple[float, int, int]]


def _plan(item: CheckInput, texts: _Texts, seed: int, random_draws: int, fractions: Sequence[float]) -> _Plan:
    text, words = item.text, list(item.words)
    if not isinstance(text, str):
        raise TypeError("text must be a str")
    n = len(words)
    if len(item.scores) != n:
        raise ValueError(f"{n} words but {len(item.scores)} scores")
    if not 0.0 <= float(item.threshold) <= 1.0:
        raise ValueError(f"threshold must be within [0, 1], got {item.threshold}")
    k = k_for(n)
    order = top_k(item.scores, n)
    rng = np.random.default_rng(seed)  # per message, so a message's draws do not depend on its batch
    random = [
        texts.add(delete_words(text, words, rng.choice(n, size=k, replace=False).tolist()))
        for _ in range(random_draws)
    ]
    aopc = []
    for fraction in fractions:
        k_f = min(n, max(1, _ceil_share(fraction, n)))
        aopc.append((fraction, k_f, texts.add(delete_words(text, words, order[:k_f]))))
    return _Plan(
        item=item,
        k=k,
        order=order,
        full=texts.add(text),
        without_top=texts.add(delete_words(text, words, order[:k])),
        top_only=texts.add(keep_only(text, words, order[:k])),
        random=random,
        aopc=aopc,
    )


def _quote(words: Sequence[Word]) -> str:
    return ", ".join(f"'{w.text}'" for w in words)


def verdict(
    *,
    top_words: Sequence[Word],
    score_full: float,
    score_without_top: float,
    score_without_random: float,
    threshold: float,
    flipped: bool,
    passed: bool,
    beaten_by_random: float,
    beats_mean: bool,
    every_word: bool = False,
) -> str:
    """The check in plain words, with its numbers. `beats_mean`: the rule's margin half held;
    `every_word`: the top words are all the words, so every random draw deletes them too."""
    named = _quote(top_words)
    full, without, rand, t = score_full, score_without_top, score_without_random, threshold
    moved = f"from {full:.2f} to {without:.2f}"
    on_random = f"random words: {rand:.2f}"
    if passed:
        if flipped:
            return f"Removing {named} drops the score {moved}, below the threshold {t:.2f} ({on_random})."
        where = (
            f"though it stays at or above the threshold {t:.2f}"
            if without >= t
            else f"the model did not flag this message: its score was already below the threshold {t:.2f}"
        )
        return f"Removing {named} lowers the score {moved} ({on_random}); {where}."
    if every_word:
        return (
            f"The message is too short to test: {named} are all its words, so removing random words "
            f"removes the same ones (the score goes {moved}); the highlight cannot be told apart from "
            "random words."
        )
    if not beats_mean:
        why = f"removing as many random words does nearly as much or more on average ({on_random})"
    else:
        why = (
            f"{beaten_by_random:.0%} of the random deletions of as many words lower it further "
            f"(on average {on_random})"
        )
    if flipped:
        return (
            f"Removing {named} drops the score {moved}, below the threshold {t:.2f}, but {why}: the "
            "highlight is not told apart from random words."
        )
    if full < t:
        # Routed by a rule, not by the model: there is no flag to explain.
        return (
            f"The model did not flag this message (score {full:.2f}, below the threshold {t:.2f}). "
            f"Removing {named} moves the score to {without:.2f}, and {why}: these words carry no "
            "more of the model's claim signal than random words do."
        )
    return f"Removing {named} moves the score {moved}, and {why}: the highlight does not explain the flag."


# Probabilities are clipped to [LOG_ODDS_CLIP, 1 - LOG_ODDS_CLIP] before taking log-odds.
LOG_ODDS_CLIP = 1e-6


def log_odds(probability: float) -> float:
    """log(p / (1 - p)) of a probability clipped away from 0 and 1 (LOG_ODDS_CLIP)."""
    p = min(max(float(probability), LOG_ODDS_CLIP), 1.0 - LOG_ODDS_CLIP)
    return math.log(p) - math.log1p(-p)


def _finish(plan: _Plan, scores: Sequence[float]) -> FaithfulnessResult:
    item, k = plan.item, plan.k
    words = list(item.words)
    full = scores[plan.full]
    without = scores[plan.without_top]
    top_only = scores[plan.top_only]
    comprehensiveness = full - without
    random_comps = tuple(full - scores[i] for i in plan.random)
    random_baseline = float(np.mean(random_comps)) if random_comps else 0.0
    random_odds = [log_odds(full) - log_odds(scores[i]) for i in plan.random]
    curve = tuple(
        AopcPoint(fraction=f, k=k_f, score_without=scores[i], comprehensiveness=full - scores[i])
        for f, k_f, i in plan.aopc
    )
    threshold = float(item.threshold)
    flipped = full >= threshold and without < threshold
    passed = passes(comprehensiveness=comprehensiveness, random_comprehensiveness=random_comps)
    beaten = beaten_share(comprehensiveness, random_comps)
    top = plan.order[:k]
    top_words = tuple(words[i] for i in top)
    return FaithfulnessResult(
        n_words=len(words),
        k=k,
        top_indices=tuple(top),
        top_words=top_words,
        top_scores=tuple(float(item.scores[i]) for i in top),
        threshold=threshold,
        score_full=full,
        score_without_top=without,
        score_top_only=top_only,
        comprehensiveness=comprehensiveness,
        sufficiency=full - top_only,
        flipped=flipped,
        random_baseline=random_baseline,
        score_without_random=full - random_baseline,
        random_comprehensiveness=random_comps,
        beaten_by_random=beaten,
        comprehensiveness_log_odds=log_odds(full) - log_odds(without),
        random_baseline_log_odds=float(np.mean(random_odds)) if random_odds else 0.0,
        aopc=float(np.mean([p.comprehensiveness for p in curve])) if curve else comprehensiveness,
        aopc_curve=curve,
        passed=passed,
        pass_rule=PASS_RULE,
        verdict_text=verdict(
            top_words=top_words,
            score_full=full,
            score_without_top=without,
            score_without_random=full - random_baseline,
            threshold=threshold,
            flipped=flipped,
            passed=passed,
            beaten_by_random=beaten,
            beats_mean=beats_the_mean(comprehensiveness, random_comps),
            every_word=k == len(words),
        ),
    )


def _scored(score_fn: ScoreFn, texts: list[str]) -> list[float]:
    raw = list(score_fn(texts))
    if len(raw) != len(texts):
        raise ValueError(f"score_fn returned {len(raw)} scores for {len(texts)} texts")
    scores = [float(s) for s in raw]
    if not all(0.0 <= s <= 1.0 for s in scores):  # also catches NaN
        raise ValueError("score_fn must return probabilities within [0, 1]")
    return scores


def batch_faithfulness_checks(
    items: Sequence[CheckInput],
    score_fn: ScoreFn,
    *,
    seed: int = 0,
    random_draws: int = RANDOM_DRAWS,
    aopc_fractions: Sequence[float] = AOPC_FRACTIONS,
) -> list[FaithfulnessResult]:
    """The check for many messages with ONE score_fn call over all their (distinct) variants.
    Bad input raises ValueError before score_fn is called."""
    if random_draws < 1:
        raise ValueError("random_draws must be >= 1")
    if not aopc_fractions or not all(0 < f <= 1 for f in aopc_fractions):
        raise ValueError("aopc_fractions must be fractions within (0, 1]")
    if not items:
        return []
    texts = _Texts()
    plans = [_plan(item, texts, seed, random_draws, aopc_fractions) for item in items]
    scores = _scored(score_fn, texts.texts)
    return [_finish(plan, scores) for plan in plans]


def faithfulness_check(
    *,
    text: str,
    words: Sequence[Word],
    scores: Sequence[float],
    score_fn: ScoreFn,
    threshold: float,
    seed: int = 0,
    random_draws: int = RANDOM_DRAWS,
    aopc_fractions: Sequence[float] = AOPC_FRACTIONS,
) -> FaithfulnessResult:
    """The check for one message (one score_fn call); see the module docstring."""
    item = CheckInput(text=text, words=words, scores=scores, threshold=threshold)
    return batch_faithfulness_checks(
        [item], score_fn, seed=seed, random_draws=random_draws, aopc_fractions=aopc_fractions
    )[0]
