"""Overlapping token windows with character offsets, and length-sorted batching.

A message longer than one window is cut into windows of `window_tokens` tokens (special tokens
included) that overlap by `stride` tokens, as the fast tokenizer's overflowing-tokens mode does
it. Each window keeps the character span [start, end) of the text it covers, so a window score
can be shown on the message. The message score is the maximum over its windows (scorer.py), so
neutral text around a claim cannot dilute it. Training cuts messages the same way.

Segmented windows (`segment_windows`): what the model reads of a message. The message is cut
into its parts first (scoring.segmentation: body, signature, quoted history) and every part is
windowed on its own, so a window never mixes the sender's sentences with a disclaimer or with
quoted mail; each window keeps its part's kind and whether it routes. Training and the Scorer
both cut messages this way, so the model is trained on what it is asked to score.

Pure: no Django, no model; only a Hugging Face *fast* tokenizer (for offsets).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from tokenizers import Tokenizer

from scoring.segmentation import BODY, Segment, routing_segments, segment, sentence_units

WINDOW_UNITS = "windows"
SENTENCE_UNITS = "sentences"
UNITS = (WINDOW_UNITS, SENTENCE_UNITS)

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
    kind: str = BODY  # the kind of message part it was cut from (scoring.segmentation)
    routes: bool = True  # whether its score can route the message

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


# A copy of the tokenizer's Rust backend set to cut windows (truncation with overflow), kept on
# the tokenizer per window settings: the same windows as `tokenizer(...,
# return_overflowing_tokens=True)`, without the wrapper converting every encoding into Python
# lists first (a third of the Scorer's host time on short messages) and without changing the
# shared tokenizer's own truncation state.
_BACKENDS_ATTRIBUTE = "_claimwatch_windowing_backends"
_BACKENDS_LOCK = threading.Lock()


def _windowing_backend(tokenizer, window_tokens: int, stride: int) -> Tokenizer:
    with _BACKENDS_LOCK:
        backends = tokenizer.__dict__.setdefault(_BACKENDS_ATTRIBUTE, {})
        backend = backends.get((window_tokens, stride))
        if backend is None:
            backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
            backend.no_padding()
            backend.enable_truncation(max_length=window_tokens, stride=stride, strategy="longest_first")
            backends[(window_tokens, stride)] = backend
    return backend


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
    backend = _windowing_backend(tokenizer, window_tokens, stride)
    for text_index, first in enumerate(backend.encode_batch(list(texts), add_special_tokens=True)):
        for encoding in (first, *first.overflowing):
            content = [
                offset
                for offset, is_special in zip(encoding.offsets, encoding.special_tokens_mask, strict=True)
                if not is_special
            ]
            start, end = (content[0][0], content[-1][1]) if content else (0, 0)
            per_text[text_index].append(Window(text_index, tuple(encoding.ids), start, end))
    return per_text


def segment_windows(
    tokenizer,
    texts: Sequence[str],
    *,
    window_tokens: int = DEFAULT_WINDOW_TOKENS,
    stride: int = DEFAULT_STRIDE,
    segments: Sequence[Sequence[Segment]] | None = None,
    units: str = WINDOW_UNITS,
) -> list[list[Window]]:
    """Cut every text into its parts (scoring.segmentation.segment, or the `segments` given, one
    list per text) and each part into windows, with offsets into the whole text, in text order.
    With units="sentences" each part is first cut into its sentences and adjacent sentence pairs
    (scoring.segmentation.sentence_units), and each of those is windowed on its own.
    Windows of a part that yields no token are dropped; a text with no token at all gets
    make_windows' single empty window."""
    if units not in UNITS:
        raise ValueError(f"units must be one of {', '.join(UNITS)}, not {units!r}")
    if segments is None:
        segments = [segment(text) for text in texts]
    parts: list[tuple[int, Segment, bool]] = []
    for index, text_segments in enumerate(segments):
        routing = set(routing_segments(text_segments))
        for seg in text_segments:
            if units == WINDOW_UNITS:
                parts.append((index, seg, seg in routing))
                continue
            for start, end in sentence_units(texts[index], seg.start, seg.end):
                parts.append((index, Segment(seg.kind, start, end), seg in routing))
    per_part = make_windows(
        tokenizer,
        [texts[i][seg.start : seg.end] for i, seg, _ in parts],
        window_tokens=window_tokens,
        stride=stride,
    )
    per_text: list[list[Window]] = [[] for _ in texts]
    for (index, seg, routes), windows in zip(parts, per_part, strict=True):
        for w in windows:
            if w.n_content_tokens == 0:
                continue
            per_text[index].append(
                replace(
                    w,
                    text_index=index,
                    start=w.start + seg.start,
                    end=w.end + seg.start,
                    kind=seg.kind,
                    routes=routes,
                )
            )
    empty = [i for i, windows in enumerate(per_text) if not windows]
    for i, windows in zip(
        empty,
        make_windows(tokenizer, [texts[i] for i in empty], window_tokens=window_tokens, stride=stride),
        strict=True,
    ):
        per_text[i] = [replace(w, text_index=i) for w in windows]
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
