"""A small template language with rationale spans, and the informal (chat) style.

Template syntax:
- `{slot}` or `{slot:cap}`: a filler from the slot table (the same slot name gives the same
  value within one message); `:cap` upper-cases its first character.
- `{one|two|}`: an inline choice between alternatives (an empty one makes it optional);
  alternatives may hold slots and further choices.
- `[[ ... ]]`: the rationale span, i.e. exactly the claim phrase.

Rendering goes chunk by chunk and records the offsets of the span markers as it goes, so every
transformation (the informal style included) is applied before an offset is taken and spans
always index the final text."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

_MARKUP = re.compile(r"(\[\[|\]\]|\{|\}|\|)")
_SLOT = re.compile(r"^([a-z][a-z0-9_]*)(:cap)?$")
_ARTICLES = ("the ", "our ", "my ", "your ", "a ", "an ")

Node = str | tuple


class TemplateError(ValueError):
    """A template is malformed (unbalanced braces or span markers, unknown slot)."""


@lru_cache(maxsize=4096)
def parse(template: str) -> tuple[Node, ...]:
    """Parse a template into a tuple of nodes (text, ("slot", name, cap), ("choice", alts),
    ("open",), ("close",))."""
    tokens = [t for t in _MARKUP.split(template) if t != ""]
    nodes, position = _parse_sequence(tokens, 0, template, top=True)
    if position != len(tokens):
        raise TemplateError(f"unbalanced '}}' or '|' in template {template!r}")
    opens = sum(1 for n in nodes if n == ("open",))
    closes = sum(1 for n in nodes if n == ("close",))
    if opens != closes:
        raise TemplateError(f"unbalanced [[ ]] in template {template!r}")
    return tuple(nodes)


def _parse_sequence(tokens: list[str], i: int, template: str, *, top: bool) -> tuple[list[Node], int]:
    nodes: list[Node] = []
    while i < len(tokens):
        piece = tokens[i]
        if piece in ("}", "|"):
            if top:
                raise TemplateError(f"stray {piece!r} in template {template!r}")
            return nodes, i
        if piece == "[[":
            nodes.append(("open",))
            i += 1
        elif piece == "]]":
            nodes.append(("close",))
            i += 1
        elif piece == "{":
            alternatives: list[tuple[Node, ...]] = []
            i += 1
            while True:
                sequence, i = _parse_sequence(tokens, i, template, top=False)
                alternatives.append(tuple(sequence))
                if i >= len(tokens):
                    raise TemplateError(f"unclosed '{{' in template {template!r}")
                if tokens[i] == "}":
                    i += 1
                    break
                i += 1  # "|"
            only = alternatives[0]
            if len(alternatives) == 1 and len(only) == 1 and isinstance(only[0], str):
                match = _SLOT.match(only[0])
                if match:
                    nodes.append(("slot", match.group(1), bool(match.group(2))))
                    continue
            if len(alternatives) == 1:
                raise TemplateError(f"'{{{only}}}' is neither a slot nor a choice in {template!r}")
            nodes.append(("choice", tuple(alternatives)))
        else:
            nodes.append(piece)
            i += 1
    return nodes, i


@dataclass
class Rendered:
    """Text with its rationale spans ([start, end) offsets into `text`)."""

    text: str
    spans: list[tuple[int, int]] = field(default_factory=list)
    # False when the text starts with a name (a slot value such as a company or a person),
    # whose capital must survive when the text is put after a greeting.
    lowerable: bool = True

    def shifted(self, offset: int) -> list[tuple[int, int]]:
        return [(start + offset, end + offset) for start, end in self.spans]


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def render(
    template: str,
    *,
    rng: random.Random,
    slot: Callable[[str], str],
    transform: Callable[[str], str] | None = None,
) -> Rendered:
    """Render `template`, drawing choices from `rng` and slot values from `slot(name)`."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    open_at: int | None = None
    lowerable: bool | None = None

    def emit(text: str, *, from_slot: bool = False) -> None:
        nonlocal length, lowerable
        if lowerable is None and text:
            lowerable = not from_slot or text.lower().startswith(_ARTICLES)
        if transform is not None:
            text = transform(text)
        parts.append(text)
        length += len(text)

    def walk(nodes: tuple[Node, ...]) -> None:
        nonlocal open_at
        for node in nodes:
            if isinstance(node, str):
                emit(node)
            elif node[0] == "slot":
                value = slot(node[1])
                emit(capitalise(value) if node[2] else value, from_slot=True)
            elif node[0] == "choice":
                walk(rng.choice(node[1]))
            elif node[0] == "open":
                if open_at is not None:
                    raise TemplateError(f"nested [[ in template {template!r}")
                open_at = length
            else:
                if open_at is None:
                    raise TemplateError(f"]] without [[ in template {template!r}")
                spans.append((open_at, length))
                open_at = None

    walk(parse(template))
    text = "".join(parts)
    for start, end in spans:
        piece = text[start:end]
        if not piece or piece != piece.strip():
            raise TemplateError(f"span {piece!r} is empty or padded with spaces in {template!r}")
    return Rendered(text, spans, lowerable=lowerable is not False)


# --- informal (chat) style --------------------------------------------------------------

_ABBREVIATIONS: tuple[tuple[str, str], ...] = (
    ("you are", "ur"),
    ("you're", "ur"),
    ("your", "ur"),
    ("you", "u"),
    ("are", "r"),
    ("please", "pls"),
    ("thanks", "thx"),
    ("tomorrow", "tmrw"),
    ("because", "bc"),
    ("going to", "gonna"),
    ("want to", "wanna"),
    ("definitely", "def"),
    ("with", "w"),
    ("really", "rly"),
    ("before", "b4"),
    ("probably", "prob"),
    ("message", "msg"),
    ("tonight", "tonite"),
    ("for", "4"),
    ("to be honest", "tbh"),
)
_TYPOS: dict[str, tuple[str, ...]] = {
    "guaranteed": ("guarenteed", "garanteed"),
    "guarantee": ("guarentee", "garantee"),
    "definitely": ("definately", "defintely"),
    "receive": ("recieve",),
    "tomorrow": ("tommorow", "tomorow"),
    "separate": ("seperate",),
    "until": ("untill",),
    "their": ("thier",),
    "which": ("wich",),
    "approved": ("aproved", "approvd"),
    "interest": ("intrest",),
    "business": ("buisness",),
    "really": ("realy",),
    "because": ("becuase",),
    "investment": ("investmnet", "invesment"),
    "meeting": ("meeing",),
    "address": ("adress",),
    "completely": ("completly",),
    "totally": ("totaly",),
    "probably": ("probly",),
    "money": ("moeny",),
    "double": ("doulbe",),
    "minutes": ("mins",),
    "portfolio": ("portfolo",),
    "schedule": ("schedual",),
}
_WORD = re.compile(r"[A-Za-z']+")


class InformalStyle:
    """Chat-style rewriting with per-message decisions: lower case, abbreviations, dropped
    apostrophes and at most two common misspellings. Deterministic given `rng`."""

    def __init__(self, rng: random.Random) -> None:
        self.lower = rng.random() < 0.75
        self.drop_apostrophes = rng.random() < 0.6
        chosen = [pair for pair in _ABBREVIATIONS if rng.random() < 0.45]
        self._abbrev = None
        if chosen:
            pattern = "|".join(re.escape(src) for src, _ in sorted(chosen, key=lambda p: -len(p[0])))
            self._abbrev = re.compile(rf"\b({pattern})\b", re.IGNORECASE)
            self._abbrev_map = dict(chosen)
        self._typo_budget = rng.choice((0, 0, 1, 1, 2))
        self._rng = rng

    def __call__(self, text: str) -> str:
        if self.lower:
            text = text.lower()
        if self._abbrev is not None:
            text = self._abbrev.sub(lambda m: self._abbrev_map[m.group(1).lower()], text)
        if self.drop_apostrophes:
            text = re.sub(r"(?<=[A-Za-z])['\u2019](?=[A-Za-z])", "", text)
        if self._typo_budget > 0:
            text = _WORD.sub(self._maybe_typo, text)
        return text

    def _maybe_typo(self, match: re.Match[str]) -> str:
        word = match.group(0)
        options = _TYPOS.get(word.lower())
        if not options or self._typo_budget <= 0 or self._rng.random() < 0.4:
            return word
        self._typo_budget -= 1
        typo = self._rng.choice(options)
        return capitalise(typo) if word[:1].isupper() else typo
