"""Attention as it really is: a NumPy reference implementation. Pure; no Django, no torch.

Scaled dot-product attention for queries q [..., n, d], keys k [..., m, d] and values
v [..., m, d_v]:

    scores  = q k^T / sqrt(d)                              [..., n, m]
    weights = softmax over the key axis (rows sum to 1)    [..., n, m]
    output  = weights v                                    [..., n, d_v]

A boolean `mask` (True = may attend, torch's convention) broadcastable to [..., n, m] sets the
other scores to -inf before the softmax, so the remaining weights of the row renormalise.

Fully masked rows (a query that may attend to nothing, e.g. a padding query under a
query-and-key padding mask): the softmax of an all -inf row is 0/0. Here such a row gets
weights of exactly 0 and an output of 0 (the same choice as torch's scaled_dot_product_attention
since 2.5), and never NaN. Pass `fully_masked="raise"` to turn it into a ValueError instead.
Such a row is the one case where a row does not sum to 1.

These weights say where one head of one layer pulled information from; they are a diagnostic,
not an explanation of a decision (see docs/explanations.md, "Why attention heat-maps are not explanations").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

ROLLOUT_NORMALISATION = (
    "attention rollout (Abnar & Zuidema 2020): per layer the mean over heads, plus the identity "
    "for the residual path, each row divided by its sum (rows sum to 1), multiplied through layers"
)


def _float(a: ArrayLike) -> NDArray[np.floating]:
    array = np.asarray(a)
    if array.dtype.kind not in "fiu":
        raise TypeError(f"expected a numeric array, got dtype {array.dtype}")
    return array.astype(np.result_type(array.dtype, np.float32), copy=False)


def _as_mask(mask: ArrayLike, shape: tuple[int, ...]) -> NDArray[np.bool_]:
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError("mask must be boolean (True where attention is allowed), got dtype " + str(m.dtype))
    try:
        return np.broadcast_to(m, shape)
    except ValueError as exc:
        raise ValueError(f"mask of shape {m.shape} does not broadcast to the scores' shape {shape}") from exc


def masked_softmax(
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    fully_masked: Literal["zero", "raise"] = "zero",
) -> NDArray[np.floating]:
    """Softmax over the last axis, with masked entries (mask False) at exactly 0.

    Numerically stable: the row maximum over allowed entries is subtracted before exp, so
    large scores do not overflow. A row with no allowed entry is all zeros (or raises)."""
    s = _float(scores)
    allowed = np.ones(s.shape, dtype=bool) if mask is None else _as_mask(mask, s.shape)
    if fully_masked not in ("zero", "raise"):
        raise ValueError(f"fully_masked must be 'zero' or 'raise', not {fully_masked!r}")
    empty = ~allowed.any(axis=-1, keepdims=True)
    if fully_masked == "raise" and empty.any():
        raise ValueError("a query row is fully masked: it may attend to no key")
    neg_inf = np.array(-np.inf, dtype=s.dtype)
    masked = np.where(allowed, s, neg_inf)
    row_max = np.max(masked, axis=-1, keepdims=True)
    row_max = np.where(empty, 0.0, row_max)  # an all -inf row would give -inf - -inf = nan
    exp = np.where(allowed, np.exp(masked - row_max), 0.0)
    total = exp.sum(axis=-1, keepdims=True)
    return np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)


def scaled_dot_product_attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    fully_masked: Literal["zero", "raise"] = "zero",
) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
    """(output [..., n, d_v], weights [..., n, m]) of softmax(q k^T / sqrt(d)) v; see the module
    docstring for the mask convention and fully masked rows."""
    q, k, v = _float(q), _float(k), _float(v)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError("q, k and v need at least two axes: [..., tokens, features]")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same feature width, got {q.shape[-1]} and {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of tokens, got {k.shape[-2]} and {v.shape[-2]}")
    d = q.shape[-1]
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) / np.sqrt(d)
    weights = masked_softmax(scores, mask, fully_masked=fully_masked)
    return np.matmul(weights, v), weights


def multi_head_attention(
    x: ArrayLike,
    w_q: ArrayLike,
    w_k: ArrayLike,
    w_v: ArrayLike,
    w_o: ArrayLike,
    n_heads: int,
    mask: ArrayLike | None = None,
    *,
    b_q: ArrayLike | None = None,
    b_k: ArrayLike | None = None,
    b_v: ArrayLike | None = None,
    b_o: ArrayLike | None = None,
) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
    """Self-attention with `n_heads` heads of width d/n_heads.

    x is [..., n, d]; the projections are [d, d] matrices applied as x @ w (q = x W_Q, as in the
    brief; a torch nn.Linear weight is the transpose). Head h uses columns h*d/H:(h+1)*d/H of
    q, k and v; the heads' outputs are concatenated and projected by w_o. `mask` broadcasts to
    [..., n, n] (the same mask for every head). Returns (output [..., n, d], weights
    [..., heads, n, n])."""
    x = _float(x)
    d = x.shape[-1]
    if not isinstance(n_heads, int) or n_heads < 1 or d % n_heads:
        raise ValueError(f"n_heads must be a positive divisor of the model width {d}, got {n_heads!r}")
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        if np.shape(w) != (d, d):
            raise ValueError(f"{name} must be [{d}, {d}], got {list(np.shape(w))}")

    def project(w: ArrayLike, b: ArrayLike | None) -> NDArray[np.floating]:
        y = x @ _float(w)
        return y if b is None else y + _float(b)

    width = d // n_heads

    def split(y: NDArray[np.floating]) -> NDArray[np.floating]:
        # [..., n, d] -> [..., heads, n, width]
        return np.swapaxes(y.reshape(*y.shape[:-1], n_heads, width), -2, -3)

    q, k, v = split(project(w_q, b_q)), split(project(w_k, b_k)), split(project(w_v, b_v))
    # The same [..., n, n]-broadcastable mask for every head: insert the head axis.
    head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask)), -3)
    heads, weights = scaled_dot_product_attention(q, k, v, head_mask)
    concat = np.swapaxes(heads, -2, -3).reshape(*x.shape[:-1], d)
    out = concat @ _float(w_o)
    return (out if b_o is None else out + _float(b_o)), weights


def causal_mask(n: int) -> NDArray[np.bool_]:
    """[n, n] boolean: query i may attend to keys 0..i (lower triangle, diagonal included)."""
    if n < 1:
        raise ValueError("n must be >= 1")
    return np.tril(np.ones((n, n), dtype=bool))


def padding_mask(
    lengths_or_attention_mask: Sequence[int] | ArrayLike,
    n: int | None = None,
    *,
    queries_too: bool = False,
) -> NDArray[np.bool_]:
    """Key padding mask from sequence lengths ([batch] ints) or a tokenizer attention_mask
    ([batch, n] of 0/1). Returns [batch, 1, n] (broadcasts over queries), True on real tokens;
    with queries_too, [batch, n, n] where padding queries attend to nothing (those rows come
    out all zero from the attention functions)."""
    a = np.asarray(lengths_or_attention_mask)
    if a.ndim == 1:
        if a.dtype.kind not in "iu" or (a < 0).any():
            raise ValueError("lengths must be non-negative integers")
        width = int(a.max(initial=0)) if n is None else n
        if (a > width).any():
            raise ValueError(f"a length exceeds n={width}")
        keys = np.arange(width)[None, :] < a[:, None]
    elif a.ndim == 2:
        if not np.isin(a, (0, 1)).all():
            raise ValueError("an attention_mask holds only 0 and 1")
        keys = a.astype(bool)
    else:
        raise ValueError("give [batch] lengths or a [batch, n] attention_mask")
    if queries_too:
        return keys[:, :, None] & keys[:, None, :]
    return keys[:, None, :]


def exclude_padding(weights: ArrayLike, attention_mask: ArrayLike) -> NDArray[np.floating]:
    """Keep only the real tokens of one sequence's attention weights [..., n, n] (attention_mask
    [n] of 0/1) on both token axes, then renormalise each row to sum to 1 over the real keys (a
    model's padding keys already have ~0 weight; this makes it exact)."""
    w = _float(weights)
    keep = np.asarray(attention_mask).astype(bool)
    if keep.ndim != 1 or w.shape[-1] != keep.shape[0] or w.shape[-2] != keep.shape[0]:
        raise ValueError(f"attention_mask [{keep.shape}] does not fit weights {w.shape}")
    w = w[..., keep, :][..., keep]
    total = w.sum(axis=-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0)


def attention_rollout(weights: ArrayLike, residual: bool = True) -> NDArray[np.floating]:
    """Attention rollout over layers (Abnar & Zuidema 2020) from weights [layers, heads, n, n]
    (padding already excluded). Per layer: A = mean over heads; with `residual`, A + I (the
    residual connection); each row divided by its sum; then R = A_L ... A_2 A_1. Returns R
    [n, n], rows summing to 1: row i spreads the top-layer position i over the input tokens.
    The normalisation is named in ROLLOUT_NORMALISATION. A diagnostic, not an explanation."""
    w = _float(weights)
    if w.ndim != 4 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"weights must be [layers, heads, n, n], got {list(w.shape)}")
    n = w.shape[-1]
    rollout = np.eye(n, dtype=w.dtype)
    for layer in w:
        a = layer.mean(axis=0)
        if residual:
            a = a + np.eye(n, dtype=w.dtype)
        total = a.sum(axis=-1, keepdims=True)
        a = np.divide(a, total, out=np.zeros_like(a), where=total > 0)
        rollout = a @ rollout
    return rollout
