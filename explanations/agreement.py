"""How an attribution's top words compare with other evidence: the rule hits (do they agree?),
the rationale spans of a labelled claim (word-level F1), another attribution of the same words
(Spearman rank correlation, e.g. two model versions). Pure; no Django, no torch."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from scipy import stats

from explanations.words import split_words


class _Span(Protocol):
    start: int
    end: int


Span = _Span | tuple[int, int]


def _span(s: Span) -> tuple[int, int]:
    return (s[0], s[1]) if isinstance(s, tuple) else (s.start, s.end)


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def rule_agreement(top_words: Sequence[Span], rule_spans: Sequence[Span]) -> bool | None:
    """Whether a matched rule phrase is among the top-k words: True when at least one top word
    overlaps a rule hit's span. None when there is no rule hit (nothing to agree with)."""
    rules = [_span(s) for s in rule_spans]
    if not rules:
        return None
    return any(_overlaps(_span(w), r) for w in top_words for r in rules)


def token_f1(selected: Sequence[Span], rationale_spans: Sequence[Span], text: str) -> float | None:
    """Word-level F1 of the selected words against the rationale spans: the words of `text`
    (split_words) overlapping a selected span are the prediction, those overlapping a rationale
    span the truth. None when the text has no rationale word (F1 is undefined)."""
    words = [(w.start, w.end) for w in split_words(text)]
    chosen = [_span(s) for s in selected]
    gold_spans = [_span(s) for s in rationale_spans]
    predicted = {i for i, w in enumerate(words) if any(_overlaps(w, s) for s in chosen)}
    gold = {i for i, w in enumerate(words) if any(_overlaps(w, s) for s in gold_spans)}
    if not gold:
        return None
    true_positives = len(predicted & gold)
    if not true_positives:
        return 0.0
    precision, recall = true_positives / len(predicted), true_positives / len(gold)
    return 2 * precision * recall / (precision + recall)


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman rank correlation of two attributions of the same words (e.g. two model
    versions). None when undefined: fewer than two words, or a constant attribution."""
    if len(a) != len(b):
        raise ValueError(f"the attributions differ in length: {len(a)} and {len(b)}")
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    rho = stats.spearmanr(a, b).statistic
    return None if math.isnan(rho) else float(rho)
