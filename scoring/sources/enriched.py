"""text/enriched mail (RFC 1896) to plain text: what a mail reader that cannot format shows.

The format is simple enough that the RFC's own appendix strips it in a page of C, and neither
the standard library nor a dependency of the product reads it, so it is read here:
- a formatting command, `<bold>` or `</bold>` (a name of letters, digits and hyphens of at most
  60 characters), is dropped, whatever it is; the text of `<param>...</param>` (a font name, a
  colour) is not the sender's words and is dropped with it;
- `<<` is a literal `<`; a `<` that opens no command is kept;
- outside `<nofill>`, one line break is a space and n > 1 line breaks are n - 1 (the sender's
  line breaks are the blank lines); inside it, line breaks are kept;
- `<excerpt>` is quoted text, a block of lines of its own: they get a "> " prefix per nesting
  level, the way plain-text mail quotes, so scoring.segmentation finds the quote as it does in
  plain text. Past MAX_QUOTE_DEPTH levels a line gets no more ">": the prefix grew with the
  nesting, so 20,000 nested `<excerpt>`s over 20,000 lines (240 KB) wrote 400 MB.

text/richtext (RFC 1341), its predecessor, is read by the same rules, besides which its `<nl>` is
a line break and its `<lt>` a `<`."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"<<|<(/?)([A-Za-z0-9-]{1,60})>|(?:\r?\n)+|[^<\r\n]+|<")
_BLANK_RUNS = re.compile(r"\n{3,}")
_RICHTEXT_CHARACTERS = {"nl": "\n", "lt": "<"}
# The most ">" a line of an excerpt gets (module docstring); mail readers seldom show more.
MAX_QUOTE_DEPTH = 10


def enriched_to_text(markup: str, *, richtext: bool = False) -> str:
    """The text of a text/enriched part (text/richtext with `richtext`), as the module docstring
    says: formatting commands and parameters dropped, line breaks as the format defines them,
    excerpts as "> " lines."""
    pieces: list[tuple[str, int]] = []  # (text, excerpt depth)
    param = nofill = excerpt = 0
    for token in _TOKEN.finditer(markup):
        text, closing, command = token.group(0), token.group(1), (token.group(2) or "").lower()
        if command == "param":
            param = max(0, param - 1) if closing else param + 1
            continue
        if param:
            continue
        if command:
            if command == "nofill":
                nofill = max(0, nofill - 1) if closing else nofill + 1
            elif command == "excerpt":  # a block: its lines start and end with it
                excerpt = max(0, excerpt - 1) if closing else excerpt + 1
                if pieces and not pieces[-1][0].endswith("\n"):
                    pieces.append(("\n", excerpt))
            elif richtext and command in _RICHTEXT_CHARACTERS and not closing:
                pieces.append((_RICHTEXT_CHARACTERS[command], excerpt))
            continue
        if text == "<<":
            text = "<"
        elif text[0] in "\r\n" and not nofill:
            breaks = text.count("\n")
            text = " " if breaks == 1 else "\n" * (breaks - 1)
        pieces.append((text.replace("\r\n", "\n"), excerpt))
    return _quoted_lines(pieces)


def _quoted_lines(pieces: list[tuple[str, int]]) -> str:
    """The pieces' text, each line prefixed with ">" per excerpt level of its first word, up to
    MAX_QUOTE_DEPTH."""
    lines: list[list] = [["", None]]  # [text, depth of its first non-blank piece]
    for text, depth in pieces:
        for number, chunk in enumerate(text.split("\n")):
            if number:
                lines.append(["", None])
            if lines[-1][1] is None and chunk.strip():
                lines[-1][1] = depth
            lines[-1][0] += chunk
    out = [
        (">" * min(depth, MAX_QUOTE_DEPTH) + " " + text.strip()) if depth else text.strip()
        for text, depth in lines
    ]
    return _BLANK_RUNS.sub("\n\n", "\n".join(out)).strip()
