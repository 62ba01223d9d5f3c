"""Words of a text and the two edits the faithfulness check makes with them: deleting chosen
words (the text re-joined so it can be re-tokenised) and keeping only chosen words. Pure; no
Django, no torch."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Word:
    """A word of a text with its character span [start, end)."""

    text: str
    start: int
    end: int


# A word: letters/digits with inner apostrophes or hyphens ("can't", "risk-free"), numbers with
# inner separators ("1,000.50"), an optional leading currency sign and trailing percent sign
# ("$200", "8%"). Other punctuation is not part of a word, so deleting a word leaves it.
_WORD = re.compile(r"[$£€]?\w+(?:(?:['\u2019\-]|(?<=\d)[.,](?=\d))\w+)*%?")


def split_words(text: str) -> list[Word]:
    """The words of `text` with character offsets (see _WORD for what a word is)."""
    return [Word(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


def _check_words(text: str, words: Sequence[Word]) -> None:
    previous_end = 0
    for i, word in enumerate(words):
        if not (previous_end <= word.start < word.end <= len(text)):
            raise ValueError(
                f"word {i} ({word.text!r}, {word.start}-{word.end}) is out of order or outside the text"
            )
        previous_end = word.end


def _indices(selected: Iterable[int], n: int) -> set[int]:
    chosen = {int(i) for i in selected}
    if any(i < 0 or i >= n for i in chosen):
        raise ValueError(f"word index out of range 0..{n - 1}")
    return chosen


def delete_words(text: str, words: Sequence[Word], remove_idx: Iterable[int]) -> str:
    """`text` without the chosen words, re-joined so it can be re-tokenised.

    Each deleted word takes the whitespace that follows it with it; a deleted stretch that is
    followed by punctuation or the end of the text takes the whitespace before it instead
    ("is guaranteed today." minus "today" is "is guaranteed."). Punctuation stays."""
    _check_words(text, words)
    remove = _indices(remove_idx, len(words))
    spans: list[list[int]] = []
    for i in sorted(remove):
        start, end = words[i].start, words[i].end
        while end < len(text) and text[end].isspace():
            end += 1
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    pieces, cursor = [], 0
    for start, end in spans:
        if (end == len(text) or not text[end - 1].isspace()) and start > cursor:
            while start > cursor and text[start - 1].isspace():
                start -= 1
        pieces.append(text[cursor:start])
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def keep_only(text: str, words: Sequence[Word], keep_idx: Iterable[int]) -> str:
    """Only the chosen words, in text order, joined by single spaces: "r alone"."""
    _check_words(text, words)
    keep = _indices(keep_idx, len(words))
    return " ".join(words[i].text for i in sorted(keep))
