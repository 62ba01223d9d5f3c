"""HTML mail to plain text, with quoted history kept recognisable.

inscriptis (Apache-2.0) renders the text the way a browser lays it out (block elements on their
own lines, table cells apart, <style>, <script> and <head> left out, entities decoded); its
annotation rules report where each <blockquote> lies, and those lines get a "> " prefix per
nesting level, the way plain-text mail quotes, so scoring.segmentation finds a Gmail or Apple
Mail quote in HTML mail as it does in plain text. Why inscriptis and not html2text, html-text,
BeautifulSoup or selectolax: README, "Email and chat sources"."""

from __future__ import annotations

import re

from inscriptis import get_annotated_text
from inscriptis.css_profiles import CSS_PROFILES
from inscriptis.model.config import ParserConfig

_CONFIG = ParserConfig(css=CSS_PROFILES["strict"], annotation_rules={"blockquote": ["quote"]})
_BLANK_RUNS = re.compile(r"\n{3,}")
# Zero-width and invisible characters newsletters pad their hidden preheaders with.
_INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u034f\u00ad]")


def html_to_text(markup: str) -> str:
    """The text of an HTML mail part: one line per block, blank lines between paragraphs,
    quoted (<blockquote>) lines prefixed with "> " (">> " when nested), trailing spaces and
    layout indentation removed."""
    if not markup.strip():
        return ""
    annotated = get_annotated_text(markup, _CONFIG)
    text: str = annotated["text"]
    quotes = [(start, end) for start, end, label in annotated["label"] if label == "quote"]
    lines, position, out = text.split("\n"), 0, []
    for line in lines:
        start, end = position, position + len(line)
        position = end + 1
        content = _INVISIBLE.sub("", line).replace("\xa0", " ").strip()
        if content:
            depth = sum(1 for a, b in quotes if a < end and start < b)
        else:  # a blank line between two quoted paragraphs stays quoted
            depth = sum(1 for a, b in quotes if a < start and end < b)
        out.append((">" * depth + " " + content).rstrip() if depth else content)
    return _BLANK_RUNS.sub("\n\n", "\n".join(out)).strip()
