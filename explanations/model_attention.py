"""The model's own attention for a span: weights per layer and head, padding excluded, and
attention rollout. torch; no Django.

Eager attention is switched on for the pass (SDPA does not return weights) and switched back.
These weights say where information flowed at one head of one layer; they are a diagnostic,
shown apart and labelled, never an explanation (docs/explanations.md, "Why attention heat-maps
are not explanations").
The faithfulness report puts "attention top-k" to the same deletion test as the attributions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from explanations.attention import attention_rollout, exclude_padding
from explanations.attribution import merge_to_words
from explanations.model_io import ExplainedSpan, eager_attention, encode, model_lock, padded, token_to_word
from scoring.classifier.windows import length_sorted_batches

ATTENTION_NORMALISATION = (
    "softmax over keys per query row (rows sum to 1), padding excluded on both axes and rows "
    "renormalised over the real tokens"
)


@dataclass(frozen=True)
class AttentionMaps:
    """One text's attention: weights [layers, heads, n, n] over its real tokens, rollout [n, n],
    the tokens, and each token's word (None: special token or punctuation)."""

    tokens: list[str]
    weights: np.ndarray
    rollout: np.ndarray
    token_words: list[int | None]

    def cls_row_word_scores(self, n_words: int, *, layer: int = -1, head: int | None = None) -> np.ndarray:
        """[CLS]'s attention row at one layer (one head, or the mean over heads), summed into
        words: what the 'attention top-k' method ranks by."""
        layer_weights = self.weights[layer]
        row = (layer_weights.mean(axis=0) if head is None else layer_weights[head])[0]
        return merge_to_words(row, self.token_words, n_words)[0]


def attention_maps(
    scorer, spans: Sequence[ExplainedSpan], *, tokens_per_forward: int = 8192
) -> list[AttentionMaps]:
    """The attention weights of each span's text, one padded batch per token budget."""
    max_tokens = int(getattr(scorer.model.config, "max_position_embeddings", 512))
    encoded = encode(scorer.tokenizer, [s.text for s in spans], max_tokens=max_tokens)
    lengths = [len(e.input_ids) for e in encoded]
    out: list[AttentionMaps | None] = [None] * len(spans)
    model = scorer.model
    with model_lock, eager_attention(model), torch.inference_mode():
        for batch in length_sorted_batches(
            lengths, token_budget=max(tokens_per_forward, max(lengths, default=1))
        ):
            ids, mask = padded([encoded[i].input_ids for i in batch.indices], scorer._pad_id, scorer.device)
            attentions = model(input_ids=ids, attention_mask=mask, output_attentions=True).attentions
            stacked = torch.stack([a.float() for a in attentions], dim=1).cpu().numpy()  # [B, L, H, n, n]
            masks = mask.cpu().numpy()
            for row, index in enumerate(batch.indices):
                weights = exclude_padding(stacked[row], masks[row])
                enc = encoded[index]
                out[index] = AttentionMaps(
                    tokens=scorer.tokenizer.convert_ids_to_tokens(list(enc.input_ids)),
                    weights=weights,
                    rollout=attention_rollout(weights),
                    token_words=token_to_word(enc, spans[index].words),
                )
    return out  # type: ignore[return-value]
