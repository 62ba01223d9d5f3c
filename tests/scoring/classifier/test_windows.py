import itertools

import pytest
from django.conf import settings
from transformers import AutoTokenizer

from scoring.classifier.windows import check_window_settings, length_sorted_batches, make_windows


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(settings.BASE_MODEL_PATH)


WORDS = ["apple", "banana", "cherry", "river", "mountain", "table", "window", "garden", "yellow", "orange"]
LONG = " ".join(WORDS[i % len(WORDS)] + ("." if i % 7 == 6 else "") for i in range(150))  # one token per word


def test_a_short_text_is_one_window_covering_the_whole_text(tokenizer):
    [windows] = make_windows(tokenizer, ["Returns are guaranteed."], window_tokens=16, stride=4)

    assert len(windows) == 1
    assert (windows[0].start, windows[0].end) == (0, len("Returns are guaranteed."))
    assert windows[0].input_ids[0] == tokenizer.cls_token_id
    assert windows[0].input_ids[-1] == tokenizer.sep_token_id


def test_long_text_windows_overlap_by_the_stride_and_their_offsets_point_into_the_text(tokenizer):
    [windows] = make_windows(tokenizer, [LONG], window_tokens=16, stride=6)

    assert len(windows) > 5
    for window in windows:
        assert window.n_tokens <= 16
        # the window's tokens are the tokens of its character span
        again = tokenizer(LONG[window.start : window.end])["input_ids"]
        assert tuple(again) == window.input_ids
    for first, second in itertools.pairwise(windows):
        assert first.input_ids[-1 - 6 : -1] == second.input_ids[1 : 1 + 6]  # 6 shared tokens
        assert second.start < first.end
    assert windows[0].start == 0
    assert windows[-1].end == len(LONG.rstrip())


def test_windows_come_back_per_text_in_input_order(tokenizer):
    texts = ["short one", LONG, "another short"]

    per_text = make_windows(tokenizer, texts, window_tokens=16, stride=6)

    assert len(per_text[0]) == 1 and len(per_text[1]) > 1 and len(per_text[2]) == 1
    assert all(w.text_index == i for i, windows in enumerate(per_text) for w in windows)


def test_an_empty_text_gives_one_window_without_content(tokenizer):
    [[window]] = make_windows(tokenizer, [""], window_tokens=16, stride=6)

    assert window.n_content_tokens == 0
    assert (window.start, window.end) == (0, 0)


@pytest.mark.parametrize(("window", "stride"), [(4, 1), (16, 14), (16, 20), (16, -1)])
def test_impossible_window_settings_are_refused(window, stride):
    with pytest.raises(ValueError):
        check_window_settings(window, stride)


def test_windows_longer_than_the_model_positions_are_refused():
    with pytest.raises(ValueError, match="positions"):
        check_window_settings(1024, 64, max_positions=512)


def test_batches_hold_every_item_once_and_stay_under_the_token_budget():
    lengths = [5, 120, 33, 64, 7, 128, 90, 12, 12, 64, 3]

    batches = list(length_sorted_batches(lengths, token_budget=256))

    indices = [i for batch in batches for i in batch.indices]
    assert sorted(indices) == list(range(len(lengths)))
    for batch in batches:
        assert batch.padded_length == max(lengths[i] for i in batch.indices)
        assert len(batch.indices) * batch.padded_length <= 256


def test_an_item_longer_than_the_budget_runs_alone():
    batches = list(length_sorted_batches([10, 500, 20], token_budget=100))

    assert [b.indices for b in batches if b.padded_length == 500] == [(1,)]


def test_batches_are_sorted_by_length_so_padding_is_small():
    lengths = [100, 3, 100, 3, 100, 3]

    batches = list(length_sorted_batches(lengths, token_budget=300))

    assert [sorted(lengths[i] for i in b.indices) for b in batches] == [[3, 3, 3], [100, 100, 100]]


def test_short_items_are_not_padded_to_the_long_ones_that_follow_them():
    # 60 chat lines then 20 full windows: one 8192-token batch would pad the lines to 128.
    lengths = [20] * 60 + [128] * 20

    batches = list(length_sorted_batches(lengths, token_budget=8192))

    for batch in batches:
        real = sum(lengths[i] for i in batch.indices)
        assert len(batch.indices) * batch.padded_length <= 1.25 * real
    assert sorted(i for b in batches for i in b.indices) == list(range(80))
    assert len(batches) == 2  # the budget still fills batches of equal lengths


def test_padding_cap_must_not_be_negative():
    with pytest.raises(ValueError, match="max_padding"):
        list(length_sorted_batches([1, 2], token_budget=10, max_padding=-0.1))


def _wrapper_windows(tokenizer, texts, window_tokens, stride):
    """The windows as the transformers wrapper's overflowing-tokens mode cuts them (the reference
    make_windows must equal: it calls the Rust backend directly, without the wrapper's lists)."""
    encoded = tokenizer(
        list(texts),
        max_length=window_tokens,
        stride=stride,
        truncation=True,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
    )
    per_text = [[] for _ in texts]
    for ids, offsets, special, index in zip(
        encoded["input_ids"],
        encoded["offset_mapping"],
        encoded["special_tokens_mask"],
        encoded["overflow_to_sample_mapping"],
        strict=True,
    ):
        content = [offset for offset, is_special in zip(offsets, special, strict=True) if not is_special]
        start, end = (content[0][0], content[-1][1]) if content else (0, 0)
        per_text[index].append((tuple(ids), start, end))
    return per_text


@pytest.mark.parametrize(("window", "stride"), [(128, 64), (16, 6), (10, 0)])
def test_windows_are_the_wrappers_overflowing_windows_and_leave_the_tokenizer_as_it_was(
    tokenizer, window, stride
):
    from scoring.corpus.jsonl import read_jsonl

    corpus = [row["body"] for row in itertools.islice(read_jsonl(settings.CORPUS_PATH, validate=False), 400)]
    odd = ["", "   ", "\u200b\u200b", "😀 up 😀", "x" * 3000, "Hi,\r\n\r\nSee below.\n> quoted"]
    texts = [*corpus, LONG, *odd]
    before = (tokenizer.backend_tokenizer.truncation, tokenizer.backend_tokenizer.padding)

    ours = make_windows(tokenizer, texts, window_tokens=window, stride=stride)

    assert (tokenizer.backend_tokenizer.truncation, tokenizer.backend_tokenizer.padding) == before
    assert [[(w.input_ids, w.start, w.end) for w in windows] for windows in ours] == _wrapper_windows(
        tokenizer, texts, window, stride
    )
    assert all(w.text_index == i for i, windows in enumerate(ours) for w in windows)
