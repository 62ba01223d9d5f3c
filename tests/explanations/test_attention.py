"""The NumPy attention reference, checked against examples worked by hand and against torch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from explanations.attention import (
    attention_rollout,
    causal_mask,
    exclude_padding,
    masked_softmax,
    multi_head_attention,
    padding_mask,
    scaled_dot_product_attention,
)

E = math.e

# Three tokens, d_k = 4 (so the scale is 1/sqrt(4) = 1/2). With k = 2 * (the first three unit
# vectors), q k^T / 2 is just the first three columns of q:
#   q = [[1, 0, 0, 0],        scaled scores S = [[1, 0, 0],
#        [0, 2, 0, 0],                           [0, 2, 0],
#        [1, 1, 0, 0]]                           [1, 1, 0]]
Q = np.array([[1, 0, 0, 0], [0, 2, 0, 0], [1, 1, 0, 0]], dtype=float)
K = 2 * np.eye(3, 4)
# Values: token j carries the j-th unit vector times 6, so the output shows the weights * 6.
V = 6 * np.eye(3)


def test_two_tokens_worked_by_hand():
    # q1 = [1,1,0,0], k1 = [1,1,0,0], k2 = 0: q1.k1 = 2, scaled 2/2 = 1; q1.k2 = 0.
    #   row 1 = softmax([1, 0]) = [e/(e+1), 1/(e+1)]                 = [0.7311, 0.2689]
    # q2 = 0: both scores 0, so row 2 = [1/2, 1/2].
    # v = [[2, 0], [0, 4]]: out1 = [2e/(e+1), 4/(e+1)], out2 = [1, 2].
    q = np.array([[1, 1, 0, 0], [0, 0, 0, 0]])
    k = np.array([[1, 1, 0, 0], [0, 0, 0, 0]])
    v = np.array([[2, 0], [0, 4]])
    out, w = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w, [[E / (E + 1), 1 / (E + 1)], [0.5, 0.5]])
    np.testing.assert_allclose(out, [[2 * E / (E + 1), 4 / (E + 1)], [1, 2]])


def test_three_tokens_worked_by_hand():
    # Row 1: softmax([1, 0, 0]) = [e, 1, 1] / (e + 2)
    # Row 2: softmax([0, 2, 0]) = [1, e^2, 1] / (e^2 + 2)
    # Row 3: softmax([1, 1, 0]) = [e, e, 1] / (2e + 1)
    out, w = scaled_dot_product_attention(Q, K, V)
    expected = np.array(
        [
            [E, 1, 1] / np.float64(E + 2),
            [1, E**2, 1] / np.float64(E**2 + 2),
            [E, E, 1] / np.float64(2 * E + 1),
        ]
    )
    np.testing.assert_allclose(w, expected)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0)
    np.testing.assert_allclose(out, 6 * expected)


def test_a_masked_key_is_set_to_minus_infinity_and_the_row_renormalises():
    # Hide key 3 from every query (a padded third token): row 1 was [e, 1, 1]/(e+2); without
    # key 3 it is softmax([1, 0]) = [e, 1]/(e+1) and 0. Row 3 becomes [e, e]/(2e) = [1/2, 1/2].
    mask = np.array([True, True, False])
    _, w = scaled_dot_product_attention(Q, K, V, mask)
    np.testing.assert_allclose(w[0], [E / (E + 1), 1 / (E + 1), 0])
    np.testing.assert_allclose(w[2], [0.5, 0.5, 0])
    np.testing.assert_allclose(w.sum(axis=-1), 1.0)
    assert (w[:, 2] == 0).all()


def test_a_causal_mask_lets_each_token_see_only_itself_and_earlier_tokens():
    # Row 1 sees key 1 only: [1, 0, 0]. Row 2: softmax([0, 2]) = [1, e^2]/(1+e^2). Row 3: all.
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    _, w = scaled_dot_product_attention(Q, K, V, causal_mask(3))
    np.testing.assert_allclose(w[0], [1, 0, 0])
    np.testing.assert_allclose(w[1], [1 / (1 + E**2), E**2 / (1 + E**2), 0])
    np.testing.assert_allclose(w[2], [E, E, 1] / np.float64(2 * E + 1))


def test_padding_masks_from_lengths_and_from_an_attention_mask_agree():
    from_lengths = padding_mask([3, 1], 3)
    from_attention = padding_mask(np.array([[1, 1, 1], [1, 0, 0]]))
    assert from_lengths.shape == (2, 1, 3)
    assert from_lengths.tolist() == from_attention.tolist() == [[[True, True, True]], [[True, False, False]]]
    both = padding_mask([2], 3, queries_too=True)
    assert both[0].tolist() == [[True, True, False], [True, True, False], [False, False, False]]


def test_a_batch_with_padding_gives_each_sequence_its_own_unpadded_attention():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 2, 4, 8))
    _, w = scaled_dot_product_attention(q, k, v, padding_mask([4, 2]))
    _, w_short = scaled_dot_product_attention(q[1], k[1, :2], v[1, :2])
    np.testing.assert_allclose(w[1, :, :2], w_short)
    assert (w[1, :, 2:] == 0).all()


def test_a_fully_masked_row_gives_zeros_not_nan_or_raises_when_asked():
    mask = np.array([[True, True, False], [False, False, False], [True, True, True]])
    out, w = scaled_dot_product_attention(Q, K, V, mask)
    assert not np.isnan(w).any() and not np.isnan(out).any()
    assert (w[1] == 0).all() and (out[1] == 0).all()
    with pytest.raises(ValueError, match="fully masked"):
        scaled_dot_product_attention(Q, K, V, mask, fully_masked="raise")


def test_the_softmax_is_stable_for_huge_scores():
    w = masked_softmax(np.array([[1000.0, 1000.0, -1000.0]]))
    np.testing.assert_allclose(w, [[0.5, 0.5, 0.0]])


@pytest.mark.parametrize("bad_mask", [np.array([1, 1, 0]), np.ones((2, 2), dtype=bool)])
def test_a_mask_that_is_not_boolean_or_does_not_fit_is_refused(bad_mask):
    with pytest.raises((TypeError, ValueError), match="mask"):
        scaled_dot_product_attention(Q, K, V, bad_mask)


def test_multi_head_attention_is_the_heads_concatenated_and_projected():
    # given two heads of width 2 over 3 tokens of width 4
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3, 4))
    w_q, w_k, w_v, w_o = rng.normal(size=(4, 4, 4))
    # when
    out, weights = multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads=2, mask=causal_mask(3))
    # then: each head is single-head attention on its slice of the projections
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    heads = []
    for h, cols in enumerate([slice(0, 2), slice(2, 4)]):
        head_out, head_w = scaled_dot_product_attention(q[:, cols], k[:, cols], v[:, cols], causal_mask(3))
        np.testing.assert_allclose(weights[h], head_w)
        heads.append(head_out)
    np.testing.assert_allclose(out, np.concatenate(heads, axis=-1) @ w_o)
    assert weights.shape == (2, 3, 3)


def test_multi_head_attention_matches_torch_with_biases():
    rng = np.random.default_rng(3)
    n, d, h = 5, 8, 4
    x = rng.normal(size=(n, d))
    w_q, w_k, w_v, w_o = rng.normal(size=(4, d, d))
    b_q, b_k, b_v, b_o = rng.normal(size=(4, d))
    key_padding = np.array([True, True, True, True, False])
    out, weights = multi_head_attention(
        x, w_q, w_k, w_v, w_o, h, mask=key_padding, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o
    )
    t = torch.from_numpy
    ref_out, ref_w = F.multi_head_attention_forward(
        t(x)[:, None, :],
        t(x)[:, None, :],
        t(x)[:, None, :],
        embed_dim_to_check=d,
        num_heads=h,
        in_proj_weight=t(np.concatenate([w_q.T, w_k.T, w_v.T])),
        in_proj_bias=t(np.concatenate([b_q, b_k, b_v])),
        bias_k=None,
        bias_v=None,
        add_zero_attn=False,
        dropout_p=0.0,
        out_proj_weight=t(w_o.T.copy()),
        out_proj_bias=t(b_o),
        training=False,
        key_padding_mask=t(~key_padding)[None, :],  # torch's key_padding_mask is True = ignore
        need_weights=True,
        average_attn_weights=False,
    )
    np.testing.assert_allclose(out, ref_out[:, 0, :].numpy(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(weights, ref_w[0].numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("masking", ["none", "causal", "padding", "fully_masked_row"])
def test_scaled_dot_product_attention_equals_torch_on_random_inputs(masking):
    rng = np.random.default_rng(11)
    q = rng.normal(size=(2, 3, 6, 16)).astype(np.float32)
    k = rng.normal(size=(2, 3, 6, 16)).astype(np.float32)
    v = rng.normal(size=(2, 3, 6, 5)).astype(np.float32)
    mask = {
        "none": None,
        "causal": causal_mask(6),
        "padding": padding_mask([6, 4])[:, None],  # [batch, 1, 1, n] over heads and queries
        "fully_masked_row": padding_mask(np.array([[1, 1, 1, 0, 0, 0], [1] * 6]), queries_too=True)[:, None],
    }[masking]
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    t = torch.from_numpy
    ref = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=None if mask is None else t(mask.copy()))
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-5, atol=1e-6)


def test_rollout_worked_by_hand():
    # Two layers, one head each, two tokens.
    # Layer 1: A1 = [[1, 0], [1/2, 1/2]]; + I = [[2, 0], [1/2, 3/2]]; rows / sums (2, 2):
    #   Â1 = [[1, 0], [1/4, 3/4]]
    # Layer 2: A2 = [[0, 1], [0, 1]]; + I = [[1, 1], [0, 2]]; rows / (2, 2):
    #   Â2 = [[1/2, 1/2], [0, 1]]
    # Rollout = Â2 Â1 = [[1/2 + 1/8, 3/8], [1/4, 3/4]] = [[5/8, 3/8], [1/4, 3/4]]
    layers = np.array([[[[1, 0], [0.5, 0.5]]], [[[0, 1], [0, 1]]]])
    np.testing.assert_allclose(attention_rollout(layers), [[5 / 8, 3 / 8], [1 / 4, 3 / 4]])
    # Without the residual: A2 A1 = [[1/2, 1/2], [1/2, 1/2]]
    np.testing.assert_allclose(attention_rollout(layers, residual=False), [[0.5, 0.5], [0.5, 0.5]])


def test_rollout_averages_the_heads_of_a_layer():
    # Heads [[1,0],[0,1]] and [[0,1],[1,0]] average to 1/2 everywhere; + I, normalised:
    # [[3/4, 1/4], [1/4, 3/4]].
    layer = np.array([[[[1, 0], [0, 1]], [[0, 1], [1, 0]]]])
    np.testing.assert_allclose(attention_rollout(layer), [[0.75, 0.25], [0.25, 0.75]])


def test_exclude_padding_keeps_the_real_tokens_and_renormalises_their_rows():
    weights = np.array([[[0.5, 0.3, 0.2], [0.2, 0.6, 0.2], [0.4, 0.4, 0.2]]])
    kept = exclude_padding(weights, np.array([1, 1, 0]))
    np.testing.assert_allclose(kept, [[[0.625, 0.375], [0.25, 0.75]]])
