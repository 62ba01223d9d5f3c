"""Word attributions of the claim decision: Integrated Gradients and occlusion. torch + captum;
no Django. What they need from the model and the Scorer (the window explained, encoding, the
model in attribution mode) is in explanations.model_io.

What is explained. The claim score is the Scorer's: 1 - P(no_claim), computed as the sum of the
four claim probabilities. For a message longer than one window, the window that drove the score
(the one with the maximum score) is explained, widened to whole words (`split_words`) at its
edges so that no word is cut in half; every offset is shifted back into the message body.

Integrated Gradients (Sundararajan et al. 2017) with Captum's LayerIntegratedGradients on the
word-embedding layer. Baseline: the same sequence with every content token replaced by [PAD],
keeping [CLS] and [SEP] (position and token-type embeddings are untouched, since they are added
after the word embeddings), under the same attention mask. Padding positions of a batch are
[PAD] in both input and baseline, so they get exactly zero attribution, and the attention mask
hides them from the model. A token's attribution is the sum over the embedding dimensions; a
word's is the sum over its sub-word tokens. Tokens outside every word ([CLS], [SEP], punctuation,
emoji) are reported as `unassigned`.

Many texts are attributed in one Captum call (length-sorted, padded, masked), with
`internal_batch_size` keeping each forward pass under a token budget. Captum's backward pass
computes the gradients of the embedding output only (torch.autograd.grad), frozen weights or
not; the weights are frozen meanwhile so that autograd keeps nothing for weight gradients and
the shared model never accumulates any. In float32 this batching across messages gains little:
one message's n_steps interpolation rows are already one compute-bound batch (bench_explain,
AVX2 CPU: 1.02 times the naive loop); the speed-up comes from bfloat16 where the hardware has it.

Convergence. The delta is sum(token attributions) - (F(x) - F(baseline)); by the completeness
axiom it tends to 0 as n_steps grows. The path integral is taken with the midpoint rule
(IG_METHOD). With `doublings` > 0 (the IG_REFINE_DOUBLINGS setting, default 2), the texts that
have not converged (|delta| > 0.05: explanations.faithfulness.converged) are computed again with
twice the steps, at most `doublings` times (32 -> 64 -> 128); each attribution records the steps
it used and its delta, converged or not (on the fine-tuned MiniLM, 32 steps leave most messages
unconverged and 64 converge most).

Precision of the IG gradients (`precision`, the IG_PRECISION setting): "float32", "bfloat16", or
"auto" (the default): bfloat16 where the device has bf16 matrix units (a bf16 GPU; a CPU with
AVX512-BF16 or AMX), float32 elsewhere (scoring.classifier.precision, shared with the Scorer).
In bfloat16 the interpolation steps' forward and backward passes run on `bf16_twin(model)`: the
encoder's weights in bf16, the embedding block (the layer IG interpolates) in float32, eager
attention on a CPU (its bf16 backward is 3-4 times faster there than the flash-attention one).
F(x) and F(baseline), and so the convergence delta, are computed by the float32 model, and the
faithfulness check scores with the Scorer (whose decisions are float32's). Measured on 48
flagged corpus spans (fine-tuned MiniLM, 2-core CPU with AMX, n_steps 32): IG 2.5 times as
fast as in float32 (8.7-9.0 s against 22.0-23.1 s); bench_explain --n 200: attributions'
Spearman correlation with float32 0.998 on average, the same top word and the same verdict on
all 200, mean |delta| 0.159 against 0.153.
The precision used is recorded with every explanation.

Occlusion: a word's attribution is p(x) - p(x without that word), the word deleted and the text
re-tokenised (as in the faithfulness check, never replaced with [MASK]); every variant of every
text is scored in one batched call.

The model's own attention weights (a diagnostic, never an explanation) are read in
explanations.model_attention.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from captum.attr import LayerIntegratedGradients

from explanations.faithfulness import converged
from explanations.model_io import (
    Encoded,
    ExplainedSpan,
    claim_probability,
    encode,
    frozen_weights,
    gradient_model,
    padded,
    token_to_word,
)
from explanations.words import delete_words
from scoring.classifier.precision import AUTO, BFLOAT16, FLOAT32, PRECISIONS, resolve_precision
from scoring.classifier.windows import length_sorted_batches
from scoring.errors import DeviceOutOfMemory

logger = logging.getLogger(__name__)

DEFAULT_N_STEPS = 32
# Captum's quadrature along the path: the midpoint rule. Measured on 12 flagged corpus messages
# with the fine-tuned MiniLM (whose score rises steeply over a short stretch of the path): mean
# |convergence delta| at 32 / 64 steps 0.195 / 0.010 with the midpoint rule, 0.389 / 0.068 with
# captum's default Gauss-Legendre, 0.241 / 0.028 with the trapezoid rule.
IG_METHOD = "riemann_middle"
# Tokens per IG forward pass (rows x padded length, interpolation steps included) and per group
# of texts that go through Captum together: the defaults of the IG_TOKENS_PER_FORWARD and
# IG_TOKENS_PER_CALL settings (explanations.services.explain.ig_budget).
IG_TOKENS_PER_FORWARD = 4096
IG_TOKENS_PER_CALL = 1024
BASELINE_DESCRIPTION = (
    "[PAD] token embeddings in place of every content token, [CLS] and [SEP] kept, same "
    "positions and attention mask"
)


IG_PRECISIONS = PRECISIONS


def merge_to_words(
    token_scores: Sequence[float], owner: Sequence[int | None], n_words: int
) -> tuple[np.ndarray, float]:
    """Sum token scores into their words; returns (word scores, sum of the unassigned tokens)."""
    words = np.zeros(n_words, dtype=np.float64)
    unassigned = 0.0
    for score, i in zip(token_scores, owner, strict=True):
        if i is None:
            unassigned += float(score)
        else:
            words[i] += float(score)
    return words, unassigned


@dataclass(frozen=True)
class WordAttribution:
    """Attribution scores of the words of one text (split_words order)."""

    scores: np.ndarray
    unassigned: float = 0.0
    score: float | None = None  # F(x) as the method saw it
    baseline_score: float | None = None  # IG only: F(baseline)
    convergence_delta: float | None = None  # IG only
    precision: str | None = None  # IG only: the number format of its gradients
    n_steps: int | None = None  # IG only: the steps used (more than asked when refined)


def ig_baseline(input_ids: torch.Tensor, special: torch.Tensor, pad_id: int) -> torch.Tensor:
    """The baseline ids: special tokens ([CLS], [SEP]) kept, everything else [PAD]."""
    return torch.where(special, input_ids, torch.full_like(input_ids, pad_id))


def integrated_gradients_tokens(
    model,
    encoded: Sequence[Encoded],
    *,
    pad_id: int,
    device,
    n_steps: int = DEFAULT_N_STEPS,
    tokens_per_call: int = IG_TOKENS_PER_CALL,
    tokens_per_forward: int = IG_TOKENS_PER_FORWARD,
    precision: str = FLOAT32,
) -> list[tuple[np.ndarray, float, float]]:
    """IG token attributions of many sequences, batched. Returns per sequence (token scores
    [n_tokens], F(x), F(baseline)); see the module docstring for the baseline and `precision`
    ("float32" or "bfloat16"; F(x) and F(baseline) are float32 either way)."""
    if n_steps < 2:
        raise ValueError("n_steps must be >= 2")
    if precision not in (FLOAT32, BFLOAT16):
        raise ValueError(f"precision must be {FLOAT32} or {BFLOAT16}, not {precision!r}")
    results: list[tuple[np.ndarray, float, float] | None] = [None] * len(encoded)
    if not encoded:
        return []
    differentiated = gradient_model(model, precision)
    forward = lambda ids, mask: claim_probability(differentiated, ids, mask)  # noqa: E731
    lig = LayerIntegratedGradients(forward, differentiated.get_input_embeddings())
    lengths = [len(e.input_ids) for e in encoded]
    with frozen_weights(model), torch.enable_grad():
        for batch in length_sorted_batches(lengths, token_budget=max(tokens_per_call, max(lengths))):
            # Out of device memory: fewer rows per forward pass, then half the group, until one
            # sequence at one row per pass; that still not fitting is DeviceOutOfMemory (retryable).
            pending = [(list(batch.indices), None)]
            while pending:
                indices, rows = pending.pop()
                group = [encoded[i] for i in indices]
                longest = max(lengths[i] for i in indices)
                rows = rows or max(len(group), tokens_per_forward // longest)
                failure = ""
                try:
                    ids, mask = padded([e.input_ids for e in group], pad_id, device)
                    computed = _group_attributions(lig, model, group, ids, mask, pad_id, n_steps, rows)
                except torch.OutOfMemoryError as exc:
                    failure = str(exc).splitlines()[0] if str(exc) else "out of memory"
                if failure:  # outside the except block, so the failed pass's tensors are freed
                    if torch.device(device).type == "cuda":
                        torch.cuda.empty_cache()
                    if rows > len(group):
                        pending.append((indices, max(len(group), rows // 2)))
                    elif len(indices) > 1:
                        half = len(indices) // 2
                        pending += [(indices[half:], None), (indices[:half], None)]
                    else:
                        raise DeviceOutOfMemory(
                            f"Integrated Gradients of one text of {lengths[indices[0]]} tokens does "
                            f"not fit in {device}'s free memory: {failure}"
                        ) from None
                    logger.warning(
                        "IG out of memory on %s for %d texts: smaller passes (%s)",
                        device,
                        len(group),
                        failure,
                    )
                    continue
                for row, index in enumerate(indices):
                    scores, end, start = computed[row]
                    results[index] = (scores[: lengths[index]], end, start)
    return results  # type: ignore[return-value]


def _group_attributions(lig, model, group, ids, mask, pad_id: int, n_steps: int, rows_per_forward: int):
    """(token scores, F(x), F(baseline)) of each padded row of one group, through Captum."""
    special = torch.zeros_like(ids, dtype=torch.bool)
    for row, e in enumerate(group):
        special[row, : len(e.special)] = torch.tensor(e.special)
    baseline = ig_baseline(ids, special | (mask == 0), pad_id)
    attributions = lig.attribute(
        ids,
        baselines=baseline,
        additional_forward_args=(mask,),
        n_steps=n_steps,
        method=IG_METHOD,
        internal_batch_size=rows_per_forward,
    )
    token_scores = attributions.detach().float().sum(dim=-1).cpu().numpy()
    with torch.no_grad():
        ends = claim_probability(model, torch.cat([ids, baseline]), torch.cat([mask, mask]))
    ends = ends.float().cpu().numpy()
    return [(token_scores[row], float(ends[row]), float(ends[len(group) + row])) for row in range(len(group))]


def integrated_gradients(
    scorer,
    spans: Sequence[ExplainedSpan],
    *,
    n_steps: int = DEFAULT_N_STEPS,
    doublings: int = 0,
    precision: str = AUTO,
    **budget: int,
) -> list[WordAttribution]:
    """IG word attributions of each span's text (one batched computation for all of them, and
    per refinement round); `doublings` (refinement) and `precision` (one of IG_PRECISIONS,
    resolved for the device) are in the module docstring."""
    if doublings < 0:
        raise ValueError(f"doublings must be >= 0, not {doublings}")
    precision = resolve_precision(precision, scorer.device)
    max_tokens = int(getattr(scorer.model.config, "max_position_embeddings", 512))
    encoded = encode(scorer.tokenizer, [s.text for s in spans], max_tokens=max_tokens)
    raw: list = [None] * len(spans)
    todo, steps = list(range(len(spans))), n_steps
    while todo:
        computed = integrated_gradients_tokens(
            scorer.model,
            [encoded[i] for i in todo],
            pad_id=scorer._pad_id,
            device=scorer.device,
            n_steps=steps,
            precision=precision,
            **budget,
        )
        for i, result in zip(todo, computed, strict=True):
            raw[i] = (*result, steps)
        if steps >= n_steps * 2**doublings:
            break
        todo = [i for i in todo if not converged(_delta(*raw[i][:3]))]
        steps *= 2
    out = []
    for span, enc, (tokens, full, base, used) in zip(spans, encoded, raw, strict=True):
        words, unassigned = merge_to_words(tokens, token_to_word(enc, span.words), len(span.words))
        out.append(
            WordAttribution(
                words,
                unassigned,
                score=full,
                baseline_score=base,
                convergence_delta=_delta(tokens, full, base),
                precision=precision,
                n_steps=used,
            )
        )
    return out


def _delta(tokens: np.ndarray, full: float, base: float) -> float:
    """IG's convergence delta: sum(attributions) - (F(x) - F(baseline))."""
    return float(tokens.sum()) - (full - base)


# --- occlusion ----------------------------------------------------------------------------------


def occlusion(
    score_fn: Callable[[list[str]], Sequence[float]], spans: Sequence[ExplainedSpan]
) -> list[WordAttribution]:
    """attribution(word i) = p(x) - p(x without word i), every variant of every span scored in
    ONE score_fn call (identical variants once)."""
    index: dict[str, int] = {}

    def add(text: str) -> int:
        return index.setdefault(text, len(index))

    plans = []
    for span in spans:
        full = add(span.text)
        variants = [add(delete_words(span.text, span.words, [i])) for i in range(len(span.words))]
        plans.append((full, variants))
    scores = list(score_fn(list(index))) if index else []
    out = []
    for full, variants in plans:
        p = float(scores[full])
        out.append(WordAttribution(np.array([p - float(scores[v]) for v in variants]), 0.0, p))
    return out
