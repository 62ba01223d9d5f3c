"""What counts as text to score, in one place for every stage that must agree on it: the Scorer
refuses a text without it (scoring.classifier.scorer), ingest refuses such a body before storing
it (scoring.services.ingest: 400 empty_body), the mail reader does not count such a part as text
(scoring.sources.mail) and the API's schema states the rule as a pattern (scoring.serializers);
and what no database stores (`unstorable`), which ingest refuses in any field.

Pure: no Django, no model."""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache

# Characters the BERT normaliser drops or splits on, so that a text of nothing else yields no
# token: control (Cc: tab, newline, BEL...), format (Cf: zero-width space, soft hyphen...),
# unassigned (Cn), private use (Co), surrogates (Cs), the separators (Zs, Zl, Zp: spaces), and,
# as the uncased models' normaliser strips accents, the combining marks (Mn: U+0301 alone).
NON_CONTENT_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Mn", "Zl", "Zp", "Zs"})
# ... and U+FFFD, the replacement character a decoder leaves for bytes it could not read, which
# the normaliser drops as it drops controls.
NON_CONTENT_CHARACTERS = frozenset({"\ufffd"})

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

NOTHING_TO_SCORE = "the text is empty or only whitespace/control characters: there is nothing to score"


def unstorable(text: str) -> str | None:
    """Why no database stores `text`, or None. A lone surrogate is not Unicode text (it has no UTF-8
    form: hashing or storing it fails) and PostgreSQL's text and jsonb hold no NUL; JSON can spell
    both as escapes ("\\ud800", "\\u0000")."""
    surrogate = _LONE_SURROGATE.search(text)
    if surrogate is not None:
        return (
            f"contains a lone surrogate (U+{ord(surrogate.group()):04X} at character {surrogate.start()}), "
            "which is not Unicode text"
        )
    if "\x00" in text:
        return "contains a NUL character"
    return None


def has_content(text: str) -> bool:
    """Whether `text` holds one character the model reads (one outside NON_CONTENT_CATEGORIES and
    NON_CONTENT_CHARACTERS).
    A text without one carries no claim, and scoring it would only report the model's bias on an
    empty window."""
    return any(
        unicodedata.category(char) not in NON_CONTENT_CATEGORIES and char not in NON_CONTENT_CHARACTERS
        for char in text
    )


def _escaped(code_point: int) -> str:
    # \uXXXX is read alike by Python's re, ECMA 262 and Rust's regex; above the BMP they share no
    # escape, but all three read the character itself.
    return f"\\u{code_point:04x}" if code_point <= 0xFFFF else chr(code_point)


def _as_class(ranges: list[tuple[int, int]]) -> str:
    return "".join(
        _escaped(first) if first == last else f"{_escaped(first)}-{_escaped(last)}" for first, last in ranges
    )


def _ranges(members: list[bool]) -> list[tuple[int, int]]:
    """The [first, last] runs of the code points whose entry in `members` is true."""
    ranges: list[tuple[int, int]] = []
    start = None
    for code_point, inside in enumerate([*members, False]):
        if inside and start is None:
            start = code_point
        elif not inside and start is not None:
            ranges.append((start, code_point - 1))
            start = None
    return ranges


@lru_cache(maxsize=1)
def content_pattern() -> str:
    """A regular expression that matches exactly the texts with content (has_content) and no NUL
    character, for the API's schema. The characters with and without content are spelled out as
    code points in a form Python, ECMA 262 (JSON Schema's dialect) and Rust read alike, both as
    positive classes: the surrogates lie in neither (no UTF-8 text holds one, and a negated class
    that holds U+D7FF and U+E000, the two scalar values around them, is misread by the Rust
    validator jsonschema-rs). It runs in linear time: the leading run takes only characters
    without content, so the first one with content ends it and nothing is ambiguous. Built on
    first use: it walks the whole of Unicode (about 0.2 s)."""
    kinds = [
        None if 0xD800 <= code_point <= 0xDFFF else has_content(chr(code_point))
        for code_point in range(sys.maxunicode + 1)
    ]
    content = _ranges([kind is True for kind in kinds])
    blank = _ranges([kind is False and code_point != 0 for code_point, kind in enumerate(kinds)])
    return f"^[{_as_class(blank)}]*[{_as_class(content)}][^\\x00]*$"
