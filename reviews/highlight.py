"""Split a message body into display segments for the evidence page (pure, no Django).

Each segment is a run of text with the same marks: the attribution heat of the word it belongs
to (if any) and the rule matches that cover it. Offsets are character offsets into the body,
as stored by RuleMatch and Explanation.words. The template renders `segment.text` with Django's
auto-escaping, so markup in a message body always shows as text.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

HEAT_LEVELS = 5
# Attributions smaller than this share of the largest one are shown without colour.
HEAT_FLOOR = 0.05


@dataclass(frozen=True)
class RuleSpan:
    start: int
    end: int
    label: str


@dataclass(frozen=True)
class Segment:
    """A run of body text with one set of marks. `heat` is -5..5 (0: none), signed like the
    attribution: positive pushes the score towards a claim, negative away from it."""

    text: str
    heat: int = 0
    score: float | None = None
    rules: tuple[str, ...] = ()

    @property
    def heat_class(self) -> str:
        if self.heat > 0:
            return f"heat-p{self.heat}"
        if self.heat < 0:
            return f"heat-n{-self.heat}"
        return ""


def heat_level(score: float, scale: float) -> int:
    """Bucket a signed attribution into -HEAT_LEVELS..HEAT_LEVELS relative to `scale`."""
    if scale <= 0 or not math.isfinite(score):
        return 0
    share = min(abs(score) / scale, 1.0)
    if share < HEAT_FLOOR:
        return 0
    level = max(1, math.ceil(share * HEAT_LEVELS))
    return level if score > 0 else -level


def _valid_span(start: Any, end: Any, length: int) -> bool:
    return isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= length


def build_segments(
    body: str, words: Sequence[Mapping[str, Any]] = (), rule_spans: Iterable[RuleSpan] = ()
) -> list[Segment]:
    """Segments covering the whole body, in order. Words are {start, end, score}; spans outside
    the body or empty are ignored (never raise on stored offsets). Overlapping words keep the
    first one given for the overlap."""
    length = len(body)
    word_spans: list[tuple[int, int, float]] = []
    for word in words:
        start, end, score = word.get("start"), word.get("end"), word.get("score")
        if _valid_span(start, end, length) and isinstance(score, int | float):
            word_spans.append((start, end, float(score)))
    rules = [span for span in rule_spans if _valid_span(span.start, span.end, length)]
    scale = max((abs(score) for _, _, score in word_spans if math.isfinite(score)), default=0.0)

    cuts = {0, length}
    for start, end, _ in word_spans:
        cuts.update((start, end))
    for span in rules:
        cuts.update((span.start, span.end))
    points = sorted(cuts)

    # One owner per character range: the first word that claims it.
    owner: dict[int, tuple[float, int]] = {}
    for start, end, score in word_spans:
        level = heat_level(score, scale)
        for index in range(bisect_left(points, start), bisect_left(points, end)):
            owner.setdefault(points[index], (score, level))

    segments: list[Segment] = []
    for left, right in pairwise(points):
        if left == right:
            continue
        score, heat = owner.get(left, (None, 0))
        labels = tuple(sorted({span.label for span in rules if span.start <= left < span.end}))
        segments.append(Segment(body[left:right], heat, score, labels))
    return segments
