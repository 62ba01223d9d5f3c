"""The worked example of the "How attention works" page, computed live. Pure; no Django.

Five tokens of a claim sentence, the last one padding, with small hand-picked integer queries,
keys and values (d_k = 2) so a reader can redo the arithmetic. Every number on the page comes
from explanations.attention, nothing is pasted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from explanations.attention import padding_mask, scaled_dot_product_attention

TOKENS: tuple[str, ...] = ("your", "returns", "are", "guaranteed", "[PAD]")
# Rows follow TOKENS. Small integers, chosen so that "guaranteed" looks hardest at "returns".
Q = ((1, 0), (0, 1), (1, 1), (2, 1), (0, 0))
K = ((1, 0), (2, 1), (0, 1), (1, 2), (1, 1))
V = ((1, 0), (0, 2), (1, 1), (2, 0), (0, 0))
# The row whose renormalisation the page spells out.
FOCUS_ROW = 3


@dataclass(frozen=True)
class WorkedExample:
    tokens: tuple[str, ...]
    d_k: int
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    dot: np.ndarray  # q k^T
    scaled: np.ndarray  # q k^T / sqrt(d_k)
    weights: np.ndarray  # softmax rows, no mask
    output: np.ndarray
    key_mask: np.ndarray  # True where a key may be attended
    masked_weights: np.ndarray
    masked_output: np.ndarray
    focus_row: int
    focus_kept_sum: float  # sum of the unmasked weights of the focus row before masking
    focus_renormalised: np.ndarray  # those weights divided by that sum

    def chart_data(self) -> dict[str, Any]:
        """Plain lists for the plotly heat-maps."""
        return {
            "tokens": list(self.tokens),
            "weights": self.weights.round(4).tolist(),
            "masked_weights": self.masked_weights.round(4).tolist(),
        }


def worked_example() -> WorkedExample:
    q, k, v = (np.array(a, dtype=float) for a in (Q, K, V))
    d_k = q.shape[-1]
    output, weights = scaled_dot_product_attention(q, k, v)
    key_mask = padding_mask([len(TOKENS) - 1], len(TOKENS))[0, 0]  # [PAD] is not a real token
    masked_output, masked_weights = scaled_dot_product_attention(q, k, v, key_mask)
    kept = weights[FOCUS_ROW] * key_mask
    return WorkedExample(
        tokens=TOKENS,
        d_k=d_k,
        q=q,
        k=k,
        v=v,
        dot=q @ k.T,
        scaled=q @ k.T / np.sqrt(d_k),
        weights=weights,
        output=output,
        key_mask=key_mask,
        masked_weights=masked_weights,
        masked_output=masked_output,
        focus_row=FOCUS_ROW,
        focus_kept_sum=float(kept.sum()),
        focus_renormalised=kept / kept.sum(),
    )
