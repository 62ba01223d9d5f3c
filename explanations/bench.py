"""Throughput of the project's explanation (Integrated Gradients + its faithfulness check) against
a naive loop, on the same messages, in one run. No Django; `bench_explain` prints the figures.

- batched (the project's path, engine.explain_messages with IG only, as the pipeline runs it):
  EXPLAIN_BATCH_SIZE messages per call; their spans go through Captum together (length-sorted,
  padded and masked, internal_batch_size under a token budget, weights frozen), in IG_PRECISION
  (bfloat16 gradients where the device has bf16 matrix units: explanations.attribution), and all
  the checks' variant texts are scored in one call by the Scorer, in its precision
  (SCORING_PRECISION: bfloat16 with the texts near the threshold re-scored in float32, so every
  decision flip is float32's).
- naive: for each message alone, one Captum LayerIntegratedGradients call with the same n_steps,
  quadrature (IG_METHOD) and baseline on the model as loaded (float32, captum's default internal
  batching: all steps in one forward pass; convergence delta from captum), then that message's
  check alone, its texts scored in float32.

Both run exactly n_steps: the pipeline's refinement of unconverged attributions
(IG_REFINE_DOUBLINGS) is off here, so that both do the same work; the report gives the mean
|convergence delta| of each and the share that converged (faithfulness.converged).

Both explain the same span of each message (the driving window, widened to whole words) and
merge sub-words the same way, so their attributions must agree up to the precision: the
benchmark reports the largest difference, the mean rank correlation of the two attributions, how
often they put the same word on top, and how often the two checks reach the same verdict.
`--precision float32` measures what batching alone gains.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from captum.attr import LayerIntegratedGradients
from tqdm.auto import tqdm

from explanations.agreement import spearman
from explanations.attribution import AUTO, FLOAT32, IG_METHOD, ig_baseline, merge_to_words, resolve_precision
from explanations.engine import INTEGRATED_GRADIENTS, MessageToExplain, explain_messages, explained_spans
from explanations.faithfulness import FaithfulnessResult, converged, faithfulness_check
from explanations.model_io import ExplainedSpan, claim_probability, encode, score_fn_for, token_to_word
from scoring.classifier.precision import hardware


class CountingScoreFn:
    """The Scorer's claim scores, counting the texts scored (one forward sequence each)."""

    def __init__(self, scorer) -> None:
        self._score = score_fn_for(scorer)
        self.texts = 0

    def __call__(self, texts: list[str]) -> list[float]:
        self.texts += len(texts)
        return self._score(texts)


@dataclass
class RunResult:
    seconds: float
    word_scores: list[np.ndarray]
    deltas: list[float]
    checks: list[FaithfulnessResult]
    texts_scored: int
    steps: list[int] = field(default_factory=list)


def run_batched(
    scorer,
    items: Sequence[MessageToExplain],
    *,
    n_steps: int,
    batch_size: int,
    precision: str = AUTO,
    doublings: int = 0,
    progress: bool = False,
    ig_budget: dict[str, int] | None = None,
) -> RunResult:
    """The project's path, batch by batch as the pipeline's tasks run it (`ig_budget`: IG's
    tokens per forward pass and per call; default attribution's)."""
    score_fn = CountingScoreFn(scorer)
    scores, deltas, checks, steps = [], [], [], []
    started = time.perf_counter()
    for start in tqdm(range(0, len(items), batch_size), desc="batched", disable=not progress):
        outcomes = explain_messages(
            scorer,
            items[start : start + batch_size],
            n_steps=n_steps,
            precision=precision,
            doublings=doublings,
            methods=(INTEGRATED_GRADIENTS,),
            attention=False,
            score_fn=score_fn,
            ig_budget=ig_budget,
        )
        for outcome in outcomes:
            result = outcome.methods[INTEGRATED_GRADIENTS]
            if not result.ok:
                raise RuntimeError(result.failure)
            scores.append(np.array([w["score"] for w in result.words]))
            deltas.append(result.convergence_delta)
            checks.append(result.check)
            steps.append(result.n_steps)
    return RunResult(time.perf_counter() - started, scores, deltas, checks, score_fn.texts, steps)


def naive_attribution(scorer, span: ExplainedSpan, n_steps: int) -> tuple[np.ndarray, float]:
    """One message, one plain Captum call (the model as loaded, captum's default batching)."""
    model = scorer.model
    max_tokens = int(getattr(model.config, "max_position_embeddings", 512))
    (encoded,) = encode(scorer.tokenizer, [span.text], max_tokens=max_tokens)
    ids = torch.tensor([encoded.input_ids], device=scorer.device)
    mask = torch.ones_like(ids)
    special = torch.tensor([encoded.special], device=scorer.device)
    lig = LayerIntegratedGradients(lambda i, m: claim_probability(model, i, m), model.get_input_embeddings())
    attributions, delta = lig.attribute(
        ids,
        baselines=ig_baseline(ids, special, scorer._pad_id),
        additional_forward_args=(mask,),
        n_steps=n_steps,
        method=IG_METHOD,
        return_convergence_delta=True,
    )
    model.zero_grad(set_to_none=True)
    tokens = attributions.sum(dim=-1)[0].detach().float().cpu().numpy()
    words = merge_to_words(tokens, token_to_word(encoded, span.words), len(span.words))[0]
    return words, float(delta[0])


def run_naive(
    scorer, items: Sequence[MessageToExplain], *, n_steps: int, progress: bool = False
) -> RunResult:
    """For each message alone: its span, one Captum call, its check alone (scored in float32,
    the model as loaded)."""
    score_fn = CountingScoreFn(scorer.with_precision(FLOAT32))
    scores, deltas, checks = [], [], []
    started = time.perf_counter()
    for item in tqdm(items, desc="naive", disable=not progress):
        (span,) = explained_spans(scorer, [item])
        words, delta = naive_attribution(scorer, span, n_steps)
        scores.append(words)
        deltas.append(delta)
        checks.append(
            faithfulness_check(
                text=span.text,
                words=span.words,
                scores=words.tolist(),
                score_fn=score_fn,
                threshold=item.threshold,
            )
        )
    return RunResult(time.perf_counter() - started, scores, deltas, checks, score_fn.texts)


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho of two attributions of the same words (1.0 when fewer than 3 words or
    either is constant: nothing to rank)."""
    rho = spearman(a.tolist(), b.tolist()) if len(a) >= 3 else None
    return 1.0 if rho is None else rho


def delta_figures(deltas: Sequence[float], *, prefix: str = "") -> dict[str, float]:
    """Mean |convergence delta| and the share of attributions that add up (converged)."""
    return {
        f"{prefix}mean_abs_delta": round(float(np.mean(np.abs(deltas))), 4),
        f"{prefix}converged_rate": float(np.mean([converged(d) for d in deltas])),
    }


def compare(
    scorer,
    items: Sequence[MessageToExplain],
    *,
    n_steps: int,
    batch_size: int,
    precision: str = AUTO,
    refinement: int = 0,
    progress: bool = False,
    ig_budget: dict[str, int] | None = None,
) -> dict:
    """Both paths on the same messages (after a short warm-up of each); the figures as a dict.
    With `refinement` > 0, a third run: the project's path as the pipeline runs it, unconverged
    attributions refined up to that many doublings (keys refined_*)."""
    warm = list(items[: min(2, len(items))])
    options = {"n_steps": n_steps, "batch_size": batch_size, "precision": precision, "ig_budget": ig_budget}
    run_batched(scorer, warm, **options)
    run_naive(scorer, warm, n_steps=n_steps)
    batched = run_batched(scorer, items, **options, progress=progress)
    naive = run_naive(scorer, items, n_steps=n_steps, progress=progress)
    n = len(items)
    pairs = list(zip(batched.word_scores, naive.word_scores, strict=True))
    differences = [float(np.max(np.abs(a - b))) for a, b in pairs]
    same_verdict = np.mean([a.passed == b.passed for a, b in zip(batched.checks, naive.checks, strict=True)])
    explain_rate, naive_rate = n / batched.seconds, n / naive.seconds
    report = {
        "n": n,
        "n_steps": n_steps,
        "batch_size": batch_size,
        **(ig_budget or {}),
        **hardware(scorer.device),
        "ig_precision": resolve_precision(precision, scorer.device),
        "naive_precision": FLOAT32,
        "explain_msgs_per_s": round(explain_rate, 3),
        "naive_msgs_per_s": round(naive_rate, 3),
        "ratio_vs_naive": round(explain_rate / naive_rate, 3),
        "seconds_batched": round(batched.seconds, 2),
        "seconds_naive": round(naive.seconds, 2),
        # IG: n_steps interpolation rows, each a forward and a backward pass (2 forward
        # equivalents), plus F(x) and F(baseline); the check: every text it scored.
        "forward_equivalents_per_msg": round(2 * n_steps + 2 + batched.texts_scored / n, 1),
        "check_texts_per_msg": round(batched.texts_scored / n, 1),
        "max_abs_attribution_difference": max(differences) if differences else 0.0,
        "mean_rank_correlation": round(float(np.mean([rank_correlation(a, b) for a, b in pairs])), 4),
        "same_top_word_rate": float(np.mean([np.argmax(a) == np.argmax(b) for a, b in pairs])),
        "same_verdict_rate": float(same_verdict),
        **delta_figures(batched.deltas),
        **delta_figures(naive.deltas, prefix="naive_"),
        "pass_rate": float(np.mean([c.passed for c in batched.checks])),
    }
    if refinement:
        refined = run_batched(scorer, items, **options, doublings=refinement, progress=progress)
        report.update(
            {
                "refine_doublings": refinement,
                "refined_msgs_per_s": round(n / refined.seconds, 3),
                **delta_figures(refined.deltas, prefix="refined_"),
                "refined_pass_rate": float(np.mean([c.passed for c in refined.checks])),
                "refined_steps": {str(k): v for k, v in sorted(Counter(refined.steps).items())},
            }
        )
    return report
