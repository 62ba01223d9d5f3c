"""Split a message body into display segments for the evidence page (pure, no Django).

Each segment is a run of text with the same marks: the attribution heat of the word it belongs
to (if any) and the rule matches that cover it. Offsets are character offsets into the body,
as stored by RuleMatch and Explanation.words. The template renders `segment.text` with Django's
auto-escaping, so markup in a message body always shows as text.

`build_parts` groups the segments by message part (body, signature, quoted history: the parts
the model read apart, stored on the prediction), with each part's best window score, whether it
routes and whether the message's score came from it, so that the page can show quoted history
collapsed and marked, the signature marked, and which part drove the score.
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


PART_LABELS = {
    "body": "Written by the sender",
    "signature": "Sign-off, signature and disclaimers",
    "quoted": "Quoted or forwarded history",
    "seen": "Quoted history already shown in an earlier message of this thread",
    "attachment": "Attachment",
}


@dataclass(frozen=True)
class Part:
    """A message part with its display segments: its kind, whether its words route the message,
    the best score of its windows (None when unknown) and whether the message score came from it."""

    kind: str
    routes: bool
    score: float | None
    drove_score: bool
    segments: tuple[Segment, ...]
    name: str = ""  # an attachment's file name

    @property
    def label(self) -> str:
        base = PART_LABELS.get(self.kind, self.kind)
        return f"{base}: {self.name}" if self.name else base

    @property
    def collapsed(self) -> bool:
        """Shown folded: quoted history that does not route, and history already seen."""
        return (self.kind == "quoted" and not self.routes) or self.kind == "seen"


def build_parts(
    body: str,
    segments: Sequence[Segment],
    parts: Sequence[Mapping[str, Any]] = (),
    window_scores: Sequence[Mapping[str, Any]] = (),
) -> list[Part]:
    """`segments` (build_segments of `body`) cut at the stored part boundaries. A gap between two
    parts (blank lines) joins the part before it; without stored parts the body is one part."""
    length = len(body)
    valid = [p for p in parts if _valid_span(p.get("start"), p.get("end"), length)]
    if not valid:
        return [Part("body", True, _best(window_scores, None), True, tuple(segments))]
    starts = [0] + [int(p["start"]) for p in valid[1:]] + [length]
    best_window = _best_window(window_scores)
    out: list[Part] = []
    for part, left, right in zip(valid, starts[:-1], starts[1:], strict=True):
        kind = str(part.get("kind", "body"))
        pieces = _cut(segments, left, right)
        scores = [w for w in window_scores if _inside(w, left, right)]
        out.append(
            Part(
                kind=kind,
                routes=bool(part.get("routes", True)),
                score=_best(scores, None),
                drove_score=best_window is not None and _inside(best_window, left, right),
                segments=tuple(pieces),
            )
        )
    return out


def _inside(window: Mapping[str, Any], left: int, right: int) -> bool:
    start = window.get("start")
    return isinstance(start, int) and left <= start < right


def _best(windows: Sequence[Mapping[str, Any]], default: float | None) -> float | None:
    scores = [float(w["score"]) for w in windows if isinstance(w.get("score"), int | float)]
    return max(scores) if scores else default


def _best_window(windows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    routing = [w for w in windows if w.get("routes", True) and isinstance(w.get("score"), int | float)]
    return max(routing, key=lambda w: float(w["score"])) if routing else None


def _cut(segments: Sequence[Segment], left: int, right: int) -> list[Segment]:
    """The display segments of body[left:right] (a segment crossing a boundary is split)."""
    out, position = [], 0
    for seg in segments:
        start, end = position, position + len(seg.text)
        position = end
        lo, hi = max(start, left), min(end, right)
        if lo < hi:
            out.append(Segment(seg.text[lo - start : hi - start], seg.heat, seg.score, seg.rules))
    return out
