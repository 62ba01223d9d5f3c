"""Word attributions of the claim decision: Integrated Gradients and occlusion. torch + captum;
no Django.

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

import bisect
import contextlib
import copy
import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from captum.attr import LayerIntegratedGradients

from explanations.faithfulness import Word, converged, delete_words, split_words
from scoring.classifier.precision import AUTO, BFLOAT16, FLOAT32, PRECISIONS, resolve_precision
from scoring.classifier.windows import Window, length_sorted_batches, make_windows
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


class ExplanationError(Exception):
    """A text that cannot be explained (e.g. it has no words), with the reason."""


# --- what is explained --------------------------------------------------------------------------


@dataclass(frozen=True)
class ExplainedSpan:
    """The part of a body that is explained: the driving window widened to whole words.

    `text` is body[start:end]; `words` are split_words(text) with offsets relative to `text`
    (add `start` for offsets into the body)."""

    start: int
    end: int
    text: str
    words: tuple[Word, ...]
    window_index: int
    n_windows: int


def widen_to_words(body: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) widened so that it cuts no word of `body` (split_words) in half."""
    for word in split_words(body):
        if word.start < end and start < word.end:
            start, end = min(start, word.start), max(end, word.end)
    return start, end


def explained_span(body: str, windows: Sequence[Window], window_index: int) -> ExplainedSpan:
    """The span of `body` to explain, from its scorer windows and the index of the best one."""
    if not 0 <= window_index < len(windows):
        raise ValueError(f"window {window_index} does not exist (the text has {len(windows)})")
    window = windows[window_index]
    start, end = widen_to_words(body, window.start, window.end)
    text = body[start:end]
    return ExplainedSpan(
        start=start,
        end=end,
        text=text,
        words=tuple(split_words(text)),
        window_index=window_index,
        n_windows=len(windows),
    )


def scorer_windows(scorer, texts: Sequence[str]) -> list[list[Window]]:
    """The Scorer's windows of each message, cut as the Scorer cuts them (its message parts each
    windowed on their own; no refusal checks)."""
    return scorer.cut(texts)


def claim_scores(scorer, texts: Sequence[str]) -> list[float]:
    """The model's claim score of each text read whole (max over its windows: an explained span
    is the text of one window, and a faithfulness check re-scores it with words deleted),
    accepting texts the Scorer refuses because they are empty: such a text is scored honestly as
    the model's output on [CLS] [SEP] (a check deletes every word of a one-word message)."""
    if not texts:
        return []
    per_text = make_windows(
        scorer.tokenizer, list(texts), window_tokens=scorer.window_tokens, stride=scorer.stride
    )
    flat = [w for windows in per_text for w in windows]
    probabilities = scorer.window_probabilities([w.input_ids for w in flat])
    window_scores = probabilities[:, 1:].sum(axis=1)
    offsets = np.cumsum([0] + [len(windows) for windows in per_text])
    return [float(s) for s in np.maximum.reduceat(window_scores, offsets[:-1])]


def score_fn_for(scorer) -> Callable[[list[str]], list[float]]:
    """`claim_scores` bound to a Scorer: the score_fn of explanations.faithfulness."""
    return lambda texts: claim_scores(scorer, texts)


def best_windows(scorer, per_text: Sequence[Sequence[Window]]) -> list[int]:
    """Index of the highest-scoring routing window of each text (one batched model call)."""
    flat = [w for windows in per_text for w in windows if len(windows) > 1]
    scores = iter(scorer.window_probabilities([w.input_ids for w in flat])[:, 1:].sum(axis=1) if flat else [])
    best = []
    for windows in per_text:
        if len(windows) == 1:
            best.append(0)
            continue
        values = [next(scores) if w.routes else -np.inf for w in windows]
        best.append(int(np.argmax(values)))
    return best


# --- tokens and words ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Encoded:
    """One text tokenised as a single sequence, with character offsets and special-token marks."""

    input_ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]
    special: tuple[bool, ...]


def encode(tokenizer, texts: Sequence[str], *, max_tokens: int) -> list[Encoded]:
    """Tokenise each text as one sequence ([CLS] ... [SEP]) of at most `max_tokens` tokens."""
    if not texts:
        return []
    batch = tokenizer(
        list(texts),
        truncation=True,
        max_length=max_tokens,
        padding=False,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_attention_mask=False,
        return_token_type_ids=False,
    )
    return [
        Encoded(tuple(ids), tuple(tuple(o) for o in offsets), tuple(bool(s) for s in special))
        for ids, offsets, special in zip(
            batch["input_ids"], batch["offset_mapping"], batch["special_tokens_mask"], strict=True
        )
    ]


def token_to_word(encoded: Encoded, words: Sequence[Word]) -> list[int | None]:
    """For each token, the index of the word it lies in, or None (special tokens, punctuation
    and symbols outside every word). BERT pre-tokenises on whitespace and punctuation, so a
    token never straddles two of split_words' words."""
    starts = [w.start for w in words]
    owner: list[int | None] = []
    for (start, end), special in zip(encoded.offsets, encoded.special, strict=True):
        if special or end <= start:
            owner.append(None)
            continue
        i = bisect.bisect_right(starts, start) - 1
        owner.append(i if i >= 0 and words[i].start <= start and end <= words[i].end else None)
    return owner


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


# --- the model in attribution mode ----------------------------------------------------------------

model_lock = threading.Lock()


@contextlib.contextmanager
def frozen_weights(model) -> Iterator[None]:
    """Weights do not require grad while attributing (only input gradients are needed), and are
    restored afterwards. The model is shared with the Scorer: one attribution at a time."""
    with model_lock:
        saved = [p.requires_grad for p in model.parameters()]
        try:
            for p in model.parameters():
                p.requires_grad_(False)
            yield
        finally:
            for p, flag in zip(model.parameters(), saved, strict=True):
                p.requires_grad_(flag)


@contextlib.contextmanager
def eager_attention(model) -> Iterator[None]:
    """Switch the model to eager attention (it returns weights; on a CPU its bf16 backward is the
    fast one) and back. Hold model_lock: the model is shared."""
    previous = getattr(model.config, "_attn_implementation", None)
    if previous in (None, "eager"):
        yield
        return
    model.set_attn_implementation("eager")
    try:
        yield
    finally:
        model.set_attn_implementation(previous)


_bf16_twins: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def bf16_twin(model):
    """The model IG differentiates in bfloat16: a copy of `model` in bf16 whose embedding block
    stays float32 (so Captum interpolates between the input and the baseline embeddings, and
    sums its steps' gradients, in float32), its output cast to bf16 for the encoder; eager
    attention on a CPU; weights frozen. Made once per model object and kept while it lives (a
    model whose weights change afterwards must not be attributed in bf16 through it).

    Measured (fine-tuned MiniLM, 2-core CPU with AMX, forward + input-gradient backward): 13,000
    to 14,000 tokens/s against 7,600-11,400 under bf16 autocast and 3,100-3,500 in float32; input
    gradients' cosine similarity with float32's 0.9994-0.9999."""
    with model_lock:
        twin = _bf16_twins.get(model)
        if twin is None:
            twin = copy.deepcopy(model).to(torch.bfloat16).eval()
            for weight in twin.parameters():
                weight.requires_grad_(False)
            block = getattr(getattr(twin, "base_model", None), "embeddings", None)
            if not isinstance(block, torch.nn.Module):
                block = twin.get_input_embeddings()
            block.to(torch.float32)
            block.register_forward_hook(lambda module, args, output: output.to(torch.bfloat16))
            if next(model.parameters()).device.type == "cpu" and hasattr(twin, "set_attn_implementation"):
                twin.set_attn_implementation("eager")
            _bf16_twins[model] = twin
    return twin


def gradient_model(model, precision: str):
    """The model whose gradients IG takes in `precision` (resolved): `model` itself in float32,
    its bf16_twin in bfloat16."""
    if precision == FLOAT32:
        return model
    if precision == BFLOAT16:
        return bf16_twin(model)
    raise ValueError(f"precision must be {FLOAT32} or {BFLOAT16}, not {precision!r}")


def claim_probability(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """1 - P(no_claim) per row, as the sum of the claim probabilities (the Scorer's score)."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
    return torch.softmax(logits.float(), dim=-1)[:, 1:].sum(dim=-1)


def padded(rows: Sequence[Sequence[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return ids.to(device), mask.to(device)


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
