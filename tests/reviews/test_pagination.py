import pytest

from reviews.pagination import InvalidCursor, decode_cursor, encode_cursor


def test_a_cursor_round_trips_its_values():
    token = encode_cursor([0.75, "2026-01-01T00:00:00+00:00", 12])
    assert decode_cursor(token, types=(float, str, int)) == [0.75, "2026-01-01T00:00:00+00:00", 12]


def test_a_float_slot_accepts_none_and_integers():
    assert decode_cursor(encode_cursor([None, "x", 1]), types=(float, str, int)) == [None, "x", 1]
    assert decode_cursor(encode_cursor([1, "x", 1]), types=(float, str, int)) == [1, "x", 1]


@pytest.mark.parametrize(
    "token",
    ["!!!", "bm90IGpzb24", encode_cursor([1, 2]), encode_cursor(["a", "b", 3]), encode_cursor([True])],
)
def test_a_forged_or_truncated_cursor_is_refused(token):
    with pytest.raises(InvalidCursor, match="not valid"):
        decode_cursor(token, types=(float, str, int))


def test_a_boolean_is_not_an_integer_cursor():
    with pytest.raises(InvalidCursor):
        decode_cursor(encode_cursor([True]), types=(int,))
