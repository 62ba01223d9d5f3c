"""Overlapping token windows with character offsets, and length-sorted batching.

A message longer than one window is cut into windows of `window_tokens` tokens (special tokens
included) that overlap by `stride` tokens, as the fast tokenizer's overflowing-tokens mode does
it. Each window keeps the character span [start, end) of the text it covers, so a window score
can be shown on the message. The message score is the maximum over its windows (scorer.py), so
neutral text around a claim cannot dilute it. Training cuts messages the same way.

Pure: no Django, no model; only a Hugging Face *fast* tokenizer (for offsets).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

DEFAULT_WINDOW_TOKENS = 128
DEFAULT_STRIDE = 64


# Padded tokens a batch may add on top of its real tokens (see length_sorted_batches).
MAX_PADDING = 0.25


@dataclass(frozen=True)
class Window:
    """One token window of one text: its input ids (with [CLS]/[SEP]) and character span."""

    text_index: int
    input_ids: tuple[int, ...]
    start: int
    end: int

    @property
    def n_tokens(self) -> int:
        return len(self.input_ids)

    @property
    def n_content_tokens(self) -> int:
        """Tokens of the text itself, special tokens excluded."""
        return max(0, len(self.input_ids) - 2)


def check_window_settings(window_tokens: int, stride: int, *, max_positions: int | None = None) -> None:
    """Raise ValueError for window settings that cannot work (overlap >= window, too long)."""
    if window_tokens < 8:
        raise ValueError(f"window_tokens={window_tokens} is too small (minimum 8).")
    if stride < 0 or stride >= window_tokens - 2:
        raise ValueError(
            f"stride={stride} (the overlap between windows) must be >= 0 and smaller than the "
            f"{window_tokens - 2} text tokens of a {window_tokens}-token window."
        )
    if max_positions is not None and window_tokens > max_positions:
        raise ValueError(f"window_tokens={window_tokens} exceeds the model's {max_positions} positions.")


def make_windows(
    tokenizer,
    texts: Sequence[str],
    *,
    window_tokens: int = DEFAULT_WINDOW_TOKENS,
    stride: int = DEFAULT_STRIDE,
) -> list[list[Window]]:
    """Cut every text into overlapping windows; returns one list of windows per text, in order.

    A text with no tokens (empty, whitespace, control characters only) gets one window with
    only [CLS] and [SEP] and start == end == 0: callers decide what that means (the Scorer
    refuses it)."""
    check_window_settings(window_tokens, stride)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("Windows need a fast (Rust) tokenizer for character offsets.")
    per_text: list[list[Window]] = [[] for _ in texts]
    if not texts:
        return per_text
    encoded = tokenizer(
        list(texts),
        max_length=window_tokens,
        stride=stride,
        truncation=True,
        padding=False,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_attention_mask=False,
        return_token_type_ids=False,
    )
    sample_of = encoded["overflow_to_sample_mapping"]
    for ids, offsets, special, text_index in zip(
        encoded["input_ids"],
        encoded["offset_mapping"],
        encoded["special_tokens_mask"],
        sample_of,
        strict=True,
    ):
        content = [offset for offset, is_special in zip(offsets, special, strict=True) if not is_special]
        start, end = (content[0][0], content[-1][1]) if content else (0, 0)
        per_text[text_index].append(Window(text_index, tuple(ids), start, end))
    return per_text


@dataclass(frozen=True)
class Batch:
    """Indices (into the flat window list) of windows run together, and their padded length."""

    indices: tuple[int, ...]
    padded_length: int


def length_sorted_batches(
    lengths: Sequence[int], *, token_budget: int, max_padding: float = MAX_PADDING
) -> Iterator[Batch]:
    """Group items by length so that each batch holds at most `token_budget` tokens once padded
    (batch size x longest item) and pads little: a batch is closed before an item that would make
    its padded size exceed (1 + max_padding) x its real tokens. Without that second rule the
    short items that precede a run of long ones would be padded to the long length (up to 5x the
    work on a mix of chat lines and long e-mails); on a CPU smaller batches cost nothing, and on
    a GPU the budget still fills them when lengths are close. An item longer than the budget
    runs alone.

    Items are sorted by length (stable), so the caller restores the input order by index."""
    if token_budget < 1:
        raise ValueError("token_budget must be positive.")
    if max_padding < 0:
        raise ValueError("max_padding must be >= 0.")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    current: list[int] = []
    longest = real = 0
    for index in order:
        length = lengths[index]
        padded = (len(current) + 1) * max(longest, length)
        if current and (padded > token_budget or padded > (1 + max_padding) * (real + length)):
            yield Batch(tuple(current), longest)
            current, longest, real = [], 0, 0
        current.append(index)
        longest = max(longest, length)
        real += length
    if current:
        yield Batch(tuple(current), longest)
