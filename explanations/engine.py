"""Explaining a batch of flagged messages: the driving window, Integrated Gradients and occlusion
with their faithfulness checks, rule agreement, and the attention diagnostic. No Django: the
service (explanations.services) loads rows, calls `explain_messages` and stores what it returns.

Everything is batched ACROSS messages: one IG computation for all spans, one score_fn call for
all the IG checks' variants, one for occlusion's variants and its checks, one attention pass. A
batch that fails as a whole is split in two, and so on, so that one bad message fails alone
(with its reason) and the others are explained.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from billiard.exceptions import SoftTimeLimitExceeded

from explanations.agreement import rule_agreement
from explanations.attribution import AUTO, DEFAULT_N_STEPS, WordAttribution, integrated_gradients, occlusion
from explanations.faithfulness import CheckInput, FaithfulnessResult, batch_faithfulness_checks
from explanations.model_attention import AttentionMaps, attention_maps
from explanations.model_io import (
    ExplainedSpan,
    ExplanationError,
    best_windows,
    explained_span,
    score_fn_for,
    scorer_windows,
)
from scoring.classifier.device_check import is_device_failure
from scoring.errors import DeviceFailed, DeviceOutOfMemory
from scoring.segmentation import Segment, segment

logger = logging.getLogger(__name__)

INTEGRATED_GRADIENTS = "integrated_gradients"
OCCLUSION = "occlusion"
METHODS: tuple[str, ...] = (INTEGRATED_GRADIENTS, OCCLUSION)


@dataclass(frozen=True)
class MessageToExplain:
    """A scored message: its body, the threshold it was routed with, the window scores of its
    prediction ((start, end, score) per window; None to re-score), its rule hits' spans and the
    parts the prediction read (None: scoring.segmentation finds them; a source's parts, such as
    an email's attachments, which route, are known only to the prediction)."""

    body: str
    threshold: float
    window_scores: Sequence[tuple[int, int, float]] | None = None
    rule_spans: Sequence[tuple[int, int]] = ()
    segments: Sequence[Segment] | None = None


@dataclass
class MethodOutcome:
    """One method's attribution of one message and its check (or why it failed)."""

    method: str
    words: list[dict[str, Any]] = field(default_factory=list)
    check: FaithfulnessResult | None = None
    top_words: list[dict[str, Any]] = field(default_factory=list)
    rule_agreement: bool | None = None
    n_steps: int | None = None
    convergence_delta: float | None = None
    precision: str | None = None
    compute_ms: float | None = None
    failure: str = ""

    @property
    def ok(self) -> bool:
        return not self.failure


@dataclass
class MessageOutcome:
    span: ExplainedSpan | None
    methods: dict[str, MethodOutcome]
    attention: AttentionMaps | None = None
    attention_failure: str = ""
    # The device had no memory for this message even alone: not a failure of the message; the
    # caller leaves it for another try (explanations.services.explain).
    out_of_memory: bool = False


def words_json(span: ExplainedSpan, scores: Sequence[float]) -> list[dict[str, Any]]:
    """[{word, start, end, score}] with offsets into the body."""
    return [
        {"word": w.text, "start": span.start + w.start, "end": span.start + w.end, "score": float(s)}
        for w, s in zip(span.words, scores, strict=True)
    ]


def shift_top_words(span: ExplainedSpan, check: FaithfulnessResult) -> list[dict[str, Any]]:
    return [
        {
            "word": w["word"],
            "start": span.start + w["start"],
            "end": span.start + w["end"],
            "score": w["score"],
        }
        for w in check.as_dict()["top_words"]
    ]


def _window_from_prediction(windows, window_scores) -> int | None:
    """The best window's index when the prediction's windows are the scorer's windows."""
    if not window_scores or len(window_scores) != len(windows):
        return None
    if any((w.start, w.end) != (int(s), int(e)) for w, (s, e, _) in zip(windows, window_scores, strict=True)):
        return None
    values = [
        float(score) if w.routes else -math.inf
        for w, (_, _, score) in zip(windows, window_scores, strict=True)
    ]
    return max(range(len(values)), key=values.__getitem__)


def explained_spans(scorer, items: Sequence[MessageToExplain]) -> list[ExplainedSpan | str]:
    """The span to explain of each message, or the reason it has none. The driving window comes
    from the prediction's window scores when they match the scorer's windows; otherwise the
    windows are scored again (one batched call) and the best one is taken."""
    parts = None
    if any(item.segments for item in items):  # as the prediction read them: attachments route
        parts = [list(item.segments) if item.segments else segment(item.body) for item in items]
    per_text = scorer_windows(scorer, [item.body for item in items], parts)
    chosen = [_window_from_prediction(w, item.window_scores) for w, item in zip(per_text, items, strict=True)]
    missing = [i for i, c in enumerate(chosen) if c is None]
    if missing:
        for i, best in zip(missing, best_windows(scorer, [per_text[i] for i in missing]), strict=True):
            chosen[i] = best
    spans: list[ExplainedSpan | str] = []
    for item, windows, index in zip(items, per_text, chosen, strict=True):
        span = explained_span(item.body, windows, index)
        if not span.words:
            spans.append(
                "the explained text has no words (only punctuation, symbols or emoji): "
                "there is nothing to attribute or delete"
            )
        else:
            spans.append(span)
    return spans


def _isolated(fn: Callable[[list], list], inputs: list) -> list:
    """fn over the whole list; if that raises, fn over each half, and so on, until the input that
    makes it raise is alone and gets its exception in its place (one bad input among 32 costs
    about 10 calls, not 32). A device failure, or the task's soft time limit, is no input's
    fault: it propagates."""
    if not inputs:
        return []
    try:
        return fn(inputs)
    except SoftTimeLimitExceeded:
        raise
    except Exception as exc:  # a bad input must fail alone, not take the batch with it
        if is_device_failure(exc):  # the device, not an input: no message is judged
            raise DeviceFailed(str(exc)) from exc
        if len(inputs) == 1:
            return [exc]
        logger.warning("explaining %d messages failed (%r); splitting them", len(inputs), exc)
    middle = len(inputs) // 2
    return _isolated(fn, inputs[:middle]) + _isolated(fn, inputs[middle:])


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ExplanationError | ValueError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def checked(
    score_fn,
    spans: Sequence[ExplainedSpan],
    attributions: Sequence[WordAttribution],
    thresholds,
    *,
    seed: int,
) -> list[FaithfulnessResult]:
    items = [
        CheckInput(text=s.text, words=s.words, scores=a.scores.tolist(), threshold=t)
        for s, a, t in zip(spans, attributions, thresholds, strict=True)
    ]
    return batch_faithfulness_checks(items, score_fn, seed=seed)


def _run_method(method: str, scorer, score_fn, ig: dict, seed: int, jobs: list) -> list:
    """Attribution + check for a list of (span, threshold) jobs, in one batch; `ig`: the keyword
    arguments of integrated_gradients."""
    spans = [span for span, _ in jobs]
    if method == INTEGRATED_GRADIENTS:
        attributions = integrated_gradients(scorer, spans, **ig)
    elif method == OCCLUSION:
        attributions = occlusion(score_fn, spans)
    else:
        raise ValueError(f"unknown method {method!r}")
    checks = checked(score_fn, spans, attributions, [t for _, t in jobs], seed=seed)
    return list(zip(attributions, checks, strict=True))


def explain_messages(
    scorer,
    items: Sequence[MessageToExplain],
    *,
    n_steps: int = DEFAULT_N_STEPS,
    doublings: int = 0,
    precision: str = AUTO,
    methods: Sequence[str] = METHODS,
    attention: bool = True,
    seed: int = 0,
    score_fn: Callable[[list[str]], Sequence[float]] | None = None,
    ig_budget: Mapping[str, int] | None = None,
) -> list[MessageOutcome]:
    """Explain every message with every method, batched across messages (module docstring).
    `n_steps`, `doublings` and `precision`: IG's (attribution.integrated_gradients); `ig_budget`:
    its tokens_per_forward / tokens_per_call (defaults: attribution's). `score_fn` defaults to the
    Scorer's claim scores (model_io.claim_scores)."""
    score_fn = score_fn or score_fn_for(scorer)
    ig = {"n_steps": n_steps, "doublings": doublings, "precision": precision, **(ig_budget or {})}
    spans = explained_spans(scorer, items)
    outcomes = [
        MessageOutcome(
            span=s if isinstance(s, ExplainedSpan) else None,
            methods={m: MethodOutcome(method=m, failure=s if isinstance(s, str) else "") for m in methods},
        )
        for s in spans
    ]
    ready = [i for i, s in enumerate(spans) if isinstance(s, ExplainedSpan)]
    jobs = [(spans[i], float(items[i].threshold)) for i in ready]
    for method in methods:
        started = time.perf_counter()
        results = _isolated(lambda js, m=method: _run_method(m, scorer, score_fn, ig, seed, js), jobs)
        per_message_ms = (time.perf_counter() - started) * 1000.0 / max(1, len(jobs))
        for i, result in zip(ready, results, strict=True):
            outcome = outcomes[i].methods[method]
            outcome.compute_ms = per_message_ms
            if isinstance(result, BaseException):
                outcome.failure = f"{method} failed: {_reason(result)}"
                outcomes[i].out_of_memory |= isinstance(result, DeviceOutOfMemory | torch.OutOfMemoryError)
                continue
            attribution, check = result
            span = spans[i]
            outcome.words = words_json(span, attribution.scores)
            outcome.check = check
            outcome.top_words = shift_top_words(span, check)
            outcome.rule_agreement = rule_agreement(
                [(w["start"], w["end"]) for w in outcome.top_words], list(items[i].rule_spans)
            )
            if method == INTEGRATED_GRADIENTS:
                outcome.n_steps = attribution.n_steps
                outcome.convergence_delta = attribution.convergence_delta
                outcome.precision = attribution.precision
    if attention:
        maps = _isolated(lambda ss: attention_maps(scorer, ss), [spans[i] for i in ready])
        for i, result in zip(ready, maps, strict=True):
            if isinstance(result, BaseException):
                outcomes[i].attention_failure = _reason(result)
                outcomes[i].out_of_memory |= isinstance(result, DeviceOutOfMemory | torch.OutOfMemoryError)
            else:
                outcomes[i].attention = result
    return outcomes
