import numpy as np
import pytest

from explanations.attention_codec import decode_array, encode_array
from reviews.attention_data import (
    AttentionDataError,
    heatmap_payload,
    parse_selection,
)

TOKENS = ["[CLS]", "safe", "safe", "[SEP]"]


def blobs():
    weights = np.zeros((2, 3, 4, 4), dtype=np.float32)
    weights[1, 2] = np.eye(4)
    rollout = np.full((4, 4), 0.25)
    return encode_array(weights), encode_array(rollout)


def test_arrays_round_trip_through_the_stored_format_as_float16():
    array = np.random.default_rng(0).random((2, 2, 3, 3))
    decoded = decode_array(encode_array(array))
    assert decoded.dtype == np.float16
    assert np.allclose(decoded, array, atol=1e-3)


def test_one_layer_and_head_is_returned_with_its_tokens_and_normalisation():
    weights, rollout = blobs()
    payload = heatmap_payload(
        tokens=TOKENS,
        weights_blob=weights,
        rollout_blob=rollout,
        layer=1,
        head=2,
        normalisation="softmax rows",
    )
    assert payload["z"] == np.eye(4).tolist()
    assert payload["tokens"] == TOKENS
    assert payload["title"] == "Layer 2, head 3"
    assert payload["normalisation"] == "softmax rows"


def test_rollout_needs_no_head():
    weights, rollout = blobs()
    payload = heatmap_payload(
        tokens=TOKENS,
        weights_blob=weights,
        rollout_blob=rollout,
        layer="rollout",
        head=None,
        normalisation="",
    )
    assert payload["z"][0] == [0.25] * 4
    assert "rollout" in payload["normalisation"]


@pytest.mark.parametrize(("layer", "head"), [(2, 0), (0, 3), (-1, 0)])
def test_a_layer_or_head_that_does_not_exist_is_a_clear_error(layer, head):
    weights, rollout = blobs()
    with pytest.raises(AttentionDataError, match="No layer"):
        heatmap_payload(
            tokens=TOKENS,
            weights_blob=weights,
            rollout_blob=rollout,
            layer=layer,
            head=head,
            normalisation="",
        )


def test_a_token_count_that_does_not_match_the_matrix_is_refused():
    weights, rollout = blobs()
    with pytest.raises(AttentionDataError, match="does not match"):
        heatmap_payload(
            tokens=["a"], weights_blob=weights, rollout_blob=rollout, layer=0, head=0, normalisation=""
        )


def test_corrupt_bytes_are_a_clear_error():
    with pytest.raises(AttentionDataError, match="cannot be read"):
        decode_array(b"not zlib")


@pytest.mark.parametrize(("layer", "head"), [("x", "0"), ("0", "1.5"), ("-1", "0")])
def test_selection_parameters_must_be_whole_non_negative_numbers(layer, head):
    with pytest.raises(AttentionDataError):
        parse_selection(layer, head)


def test_selection_defaults_to_the_first_layer_and_head():
    assert parse_selection(None, None) == (0, 0)
    assert parse_selection("rollout", "7") == ("rollout", None)
