"""How two forms of one text are compared: the text/plain and HTML forms of a mail's text, a
calendar's plain and HTML descriptions, an invitation and the text it is sent with. Pure: no
Django.

Words are compared, not characters: two forms of one text differ in layout (an HTML form's line
breaks, a plain form's "*bold*" and wrapped lines), in punctuation and in case, and a plain form
spells a link's address out (`<https://...>`) where the HTML form shows its text. So a text's
words (`tokens`) are its runs of letters and digits, case-folded, its links and e-mail addresses
left out: a link or address is a whitespace-separated word holding "@" or "://", or starting with
"www." or "mailto:" (after any punctuation). Each word is looked at once, so `tokens` is linear
in the text's length (a pattern finding addresses in the whole text took cubic time on
"a@a@a@...")."""

from __future__ import annotations

import re
from collections import Counter

_LINK_START = re.compile(r"\W*(?:www\.|mailto:)")
_WORD = re.compile(r"\w+")
# One form of a mail's text says more than another when it has this many words the other lacks
# (says_more). The most an ordinary HTML form adds to its text/plain form, measured on 2,000
# generated multipart/alternative mails (scoring.sources.mailgen: 400 traffic texts as Outlook,
# Gmail and newsletter HTML, the Outlook and Gmail ones also quoting an earlier message), is 12
# words: Outlook's header block over a quote, which the text/plain form writes as "On ... wrote:";
# a newsletter's button and footer add 9. 20 leaves room for a real newsletter's hidden preheader.
FORM_WORDS_MORE = 20


def words(text: str) -> str:
    """`text` with its runs of whitespace as one space: what two forms of one text share."""
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    """The words of `text` (module docstring), in order."""
    found: list[str] = []
    for word in text.casefold().split():
        if "@" in word or "://" in word or _LINK_START.match(word):
            continue  # a link or an e-mail address (module docstring)
        found.extend(_WORD.findall(word))
    return found


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


def lacking(text: str, other: str) -> int:
    """How many words of `text` `other` lacks, counted with their repeats: "guaranteed" twice in
    `text` and once in `other` is one."""
    return (Counter(tokens(text)) - Counter(tokens(other))).total()


def says_more(text: str, other: str) -> bool:
    """Whether `text` says something that `other`, another form of it, does not: `text` has words
    and `other` has none, or `text` has FORM_WORDS_MORE words `other` lacks, or the two share less
    than half of the words of each (they are two texts, not two forms of one: a text/plain form
    that says only "use an HTML-capable client")."""
    own, theirs = Counter(tokens(text)), Counter(tokens(other))
    if not own:
        return False
    if not theirs:
        return True
    missing, extra = (own - theirs).total(), (theirs - own).total()
    return missing >= FORM_WORDS_MORE or (2 * missing > own.total() and 2 * extra > theirs.total())
