"""How two forms of one text are compared: a calendar's plain and HTML descriptions, an invitation
and the text it is sent with. Pure: no Django.

Words are compared, not characters: two forms of one text differ in layout (an HTML form's line
breaks, a plain form's "*bold*" and wrapped lines), in punctuation and in case, and a plain form
spells a link's address out (`<https://...>`) where the HTML form shows its text. So a text's
words (`tokens`) are its runs of letters and digits, case-folded, its links and e-mail addresses
left out."""

from __future__ import annotations

import re

_LINK = re.compile(r"(?i)(?:\b[a-z][a-z0-9+.-]*://|\bmailto:|\bwww\.)\S*|\S+@\S+\.\w+")
_WORD = re.compile(r"\w+")


def words(text: str) -> str:
    """`text` with its runs of whitespace as one space: what two forms of one text share."""
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    """The words of `text` (module docstring), in order."""
    return _WORD.findall(_LINK.sub(" ", text).casefold())


def unsaid_lines(text: str, said: str) -> str:
    """The lines of `text` that `said` does not say: those whose words (`tokens`) are not found,
    one after the other, among the words of `said`. A line of no words says nothing; a line said
    with a word more or less, or in another order, is not said ("returns are guaranteed" is not
    said by "returns are not guaranteed")."""
    haystack = f" {' '.join(tokens(said))} "
    kept = []
    for line in text.split("\n"):
        needle = " ".join(tokens(line))
        if needle and f" {needle} " not in haystack:
            kept.append(line)
    return "\n".join(kept)
