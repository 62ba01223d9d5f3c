"""How two forms of one text are compared: the text/plain and HTML forms of a mail's text, a
calendar's plain and HTML descriptions, an invitation and the text it is sent with. Pure: no
Django.

Words are compared, not characters: two forms of one text differ in layout (an HTML form's line
breaks, a plain form's "*bold*" and wrapped lines), in punctuation and in case, and a plain form
spells a link's address out (`<https://...>`) where the HTML form shows its text. So a text's
words (`tokens`) are its runs of letters and digits, case-folded (in a script written without
spaces, each character: _UNSPACED), its links and e-mail addresses left out: a link or address
is a whitespace-separated word holding "@" or "://", or starting with "www." or "mailto:" (after
any punctuation). Each word is looked at once, so `tokens` is linear
in the text's length (a pattern finding addresses in the whole text took cubic time on
"a@a@a@...")."""

from __future__ import annotations

import re
from collections import Counter

_LINK_START = re.compile(r"\W*(?:www\.|mailto:)")
# Scripts written without spaces between words: Han, Hiragana, Katakana (and their half-width
# forms), Hangul, Thai, Lao, Khmer, Myanmar. Each of their characters is a word of its own, for a
# run of them is not one word: a text/plain form hard-wrapped at 35 characters shared no word
# with its unwrapped HTML form, and both were read.
_UNSPACED = (
    "\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u2e80-\u2fdf\u3040-\u30ff\u3130-\u318f"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc"
    "\U00020000-\U0003134f"
)
_WORD = re.compile(f"[{_UNSPACED}]|[^\\W{_UNSPACED}]+")
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


class Said:
    """What a text says, to look its lines up in (unsaid_lines): its words (`tokens`) as a suffix
    automaton, which finds whether a run of k words comes one after the other among them in k
    steps. It is built once, in time linear in the text's length, so looking up every line of
    the fields of an invitation costs their length, not their number of lines times the text's
    (a text tokenised again for each field, and searched whole for each line, was quadratic)."""

    def __init__(self, text: str) -> None:
        self._next: list[dict[str, int]] = [{}]
        self._link = [-1]
        self._length = [0]
        last = 0
        for token in tokens(text):
            last = self._extend(last, token)

    def _extend(self, last: int, token: str) -> int:
        """The standard construction (Blumer et al., 1985): at most 2n states, 3n transitions."""
        new = self._state(self._length[last] + 1, {})
        state = last
        while state != -1 and token not in self._next[state]:
            self._next[state][token] = new
            state = self._link[state]
        if state == -1:
            self._link[new] = 0
            return new
        target = self._next[state][token]
        if self._length[state] + 1 == self._length[target]:
            self._link[new] = target
            return new
        clone = self._state(self._length[state] + 1, dict(self._next[target]))
        self._link[clone] = self._link[target]
        while state != -1 and self._next[state].get(token) == target:
            self._next[state][token] = clone
            state = self._link[state]
        self._link[target] = self._link[new] = clone
        return new

    def _state(self, length: int, transitions: dict[str, int]) -> int:
        self._next.append(transitions)
        self._link.append(0)
        self._length.append(length)
        return len(self._next) - 1

    def says(self, words: list[str]) -> bool:
        """Whether `words` come one after the other among the text's words."""
        state = 0
        for word in words:
            found = self._next[state].get(word)
            if found is None:
                return False
            state = found
        return True


def unsaid_lines(text: str, said: str | Said) -> str:
    """The lines of `text` that `said` does not say: those whose words (`tokens`) are not found,
    one after the other, among the words of `said`. A line of no words says nothing; a line said
    with a word more or less, or in another order, is not said ("returns are guaranteed" is not
    said by "returns are not guaranteed"). Looking up several texts in one `said`, pass it as a
    Said, built once."""
    if isinstance(said, str):
        said = Said(said)
    kept = []
    for line in text.split("\n"):
        needle = tokens(line)
        if needle and not said.says(needle):
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
