"""Turn a stored attention diagnostic into the JSON one heat-map needs (pure, numpy only).

AttentionDiagnostic stores float16 arrays as zlib-compressed .npy bytes (the format is
explanations.attention_codec's, which writes and reads it): `weights` with shape
[layers, heads, tokens, tokens] and `rollout` with shape [tokens, tokens]. The evidence page
asks for one (layer, head) matrix at a time, so a page never downloads every head at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from explanations.attention_codec import AttentionDataError, decode_array

ROLLOUT = "rollout"
DECIMALS = 4

__all__ = ["ROLLOUT", "AttentionDataError", "heatmap_payload", "parse_selection"]


def parse_selection(layer: str | None, head: str | None) -> tuple[int | str, int | None]:
    """(layer, head) from query parameters: layer "rollout" needs no head; otherwise both are
    non-negative integers (0-based)."""
    if layer == ROLLOUT:
        return ROLLOUT, None
    try:
        layer_index = int(layer if layer is not None else "0")
        head_index = int(head if head is not None else "0")
    except ValueError as exc:
        raise AttentionDataError("layer and head must be whole numbers (or layer=rollout).") from exc
    if layer_index < 0 or head_index < 0:
        raise AttentionDataError("layer and head start at 0.")
    return layer_index, head_index


def heatmap_payload(
    *,
    tokens: Sequence[str],
    weights_blob: bytes | memoryview,
    rollout_blob: bytes | memoryview,
    layer: int | str,
    head: int | None,
    normalisation: str,
) -> dict[str, Any]:
    """The matrix for one layer/head (or the rollout) with its token labels: rows are the
    attending (query) tokens, columns the attended (key) tokens."""
    if layer == ROLLOUT:
        matrix = decode_array(rollout_blob)
        title = "Attention rollout across all layers"
        norm = "attention rollout (Abnar & Zuidema 2020) over all layers, as stored with the diagnostic"
    else:
        weights = decode_array(weights_blob)
        if weights.ndim != 4:
            raise AttentionDataError(f"weights have shape {weights.shape}, expected 4 dimensions.")
        layers, heads = weights.shape[0], weights.shape[1]
        if not (0 <= int(layer) < layers) or head is None or not (0 <= head < heads):
            raise AttentionDataError(f"No layer {layer} / head {head}: the model has {layers} x {heads}.")
        matrix = weights[int(layer), head]
        title = f"Layer {int(layer) + 1}, head {head + 1}"
        norm = normalisation
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] != len(tokens):
        raise AttentionDataError(f"matrix shape {matrix.shape} does not match {len(tokens)} tokens.")
    z = np.round(matrix.astype(np.float32), DECIMALS).tolist()
    return {"title": title, "tokens": list(tokens), "z": z, "normalisation": norm}
