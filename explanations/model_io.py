"""What the attribution methods need from the model and the Scorer (torch; no Django): the
window of a long message that is explained (the one that drove the score, widened to whole
words), the Scorer's claim scores, texts encoded and mapped token by token to words, and the
model in attribution mode (weights frozen, eager attention, its bf16 twin, one lock).
The methods themselves are in explanations.attribution."""

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

from explanations.words import Word, split_words
from scoring.classifier.precision import BFLOAT16, FLOAT32
from scoring.classifier.windows import Window, make_windows
from scoring.segmentation import Segment

logger = logging.getLogger(__name__)


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


def scorer_windows(
    scorer, texts: Sequence[str], parts: Sequence[Sequence[Segment]] | None = None
) -> list[list[Window]]:
    """The Scorer's windows of each message, cut as the Scorer cuts them (its message parts each
    windowed on their own, `parts` when given; no refusal checks)."""
    return scorer.cut(texts, parts)


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
        # Every window's score is drawn, routing or not, so the next text's scores stay aligned.
        drawn = [next(scores) for _ in windows]
        values = [score if w.routes else -np.inf for w, score in zip(windows, drawn, strict=True)]
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
