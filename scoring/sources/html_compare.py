"""The HTML-to-text comparison behind the choice of inscriptis (README, "Email and chat sources"),
as code that can be run again: `python manage.py compare_html_to_text` (pure; no Django).

Each library converts the same generated HTML mails (scoring.sources.mailgen: a text written as
Outlook, Gmail or newsletter HTML; some Outlook and Gmail ones with an earlier message quoted
under the text, as those clients quote it). Measured per library:
- ms/mail: the best of `repeat` timed passes over all mails, per mail;
- leaks: mails whose text still carries markup, CSS or script (LEAK);
- quoted found: of the mails with a quote, those where scoring.segmentation reads the quoted
  message's first line as quoted history;
- kept out: of the same, those where no line of the quoted message lands in the sender's own
  parts (body, signature), which are the parts that route.

The other libraries are not dependencies of the product: a library that is not installed is
reported as such, with what to install (`pip install html2text html-text beautifulsoup4
selectolax` into a scratch environment)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from scoring.segmentation import QUOTED, segment
from scoring.sources.html import html_to_text
from scoring.sources.mailgen import render_html

# Markup, CSS or script left in a converted text (an address in angle brackets is text).
_TAGS = "a|b|i|p|br|div|span|table|tr|td|img|html|head|body|style|script|meta|title|blockquote|o:p|xml"
LEAK = re.compile(
    rf"<\s*/?\s*(?:{_TAGS})\b[^>]*>|&(?:nbsp|zwnj|middot|lt|gt|amp);|\{{[^}}]*:[^}}]*\}}|"
    r"mso-|font-family|@media|dataLayer|<!--|-->|\[if gte"
)
STYLES = ("outlook", "gmail", "newsletter")


@dataclass(frozen=True)
class Library:
    """One converter: its name, licence, what to pip-install and how it is called."""

    name: str
    licence: str
    package: str
    convert: Callable[[str], str] | None  # None: not installed
    how: str


def _html2text() -> Callable[[str], str]:
    module = import_module("html2text")

    def convert(markup: str) -> str:
        converter = module.HTML2Text()
        converter.body_width = 0  # no re-wrapping
        return converter.handle(markup)

    return convert


def _html_text() -> Callable[[str], str]:
    return import_module("html_text").extract_text


def _beautifulsoup() -> Callable[[str], str]:
    soup = import_module("bs4").BeautifulSoup
    return lambda markup: soup(markup, "html.parser").get_text("\n")


def _selectolax() -> Callable[[str], str]:
    parser = import_module("selectolax.lexbor").LexborHTMLParser  # its maintained engine

    def convert(markup: str) -> str:
        tree = parser(markup)
        tree.strip_tags(["style", "script", "head"])
        return tree.text(separator="\n")

    return convert


_CANDIDATES: tuple[tuple[str, str, str, Callable[[], Callable[[str], str]], str], ...] = (
    ("html2text", "GPL-3.0", "html2text", _html2text, "HTML2Text(body_width=0).handle"),
    ("inscriptis", "Apache-2.0", "inscriptis", lambda: html_to_text, "scoring.sources.html.html_to_text"),
    ("html-text", "MIT", "html-text", _html_text, "html_text.extract_text"),
    ("BeautifulSoup get_text", "MIT", "beautifulsoup4", _beautifulsoup, 'get_text("\\n"), html.parser'),
    ("selectolax", "MIT", "selectolax", _selectolax, 'strip style/script/head, text(separator="\\n")'),
)


def libraries() -> list[Library]:
    """Every candidate, with its converter when it can be imported here."""
    out = []
    for name, licence, package, load, how in _CANDIDATES:
        try:
            convert: Callable[[str], str] | None = load()
        except ImportError:
            convert = None
        out.append(Library(name, licence, package, convert, how))
    return out


@dataclass(frozen=True)
class Mail:
    html: str
    style: str
    quoted: str | None


def build_mails(texts: Sequence[str], quotes: Sequence[str], *, n_quoted: int) -> list[Mail]:
    """One mail per text, the styles in turn; the first `n_quoted` Outlook and Gmail mails quote
    an earlier message (newsletters quote nothing)."""
    mails, given = [], 0
    for index, text in enumerate(texts):
        style = STYLES[index % len(STYLES)]
        quoted = None
        if style != "newsletter" and given < n_quoted:
            quoted, given = quotes[given % len(quotes)], given + 1
        mails.append(Mail(render_html(text, style, quoted=quoted), style, quoted))
    return mails


def _first_line(text: str) -> str:
    return next(line.strip() for line in text.strip().split("\n") if line.strip())


def quote_outcome(converted: str, quoted: str) -> tuple[bool, bool]:
    """(found: the quoted message's first line read as quoted history, kept out: no line of the
    quoted message in the sender's own parts)."""
    parts = segment(converted)
    first = _first_line(quoted)
    found = any(
        seg.kind == QUOTED and first in converted[seg.start : seg.end].replace("\n", " ") for seg in parts
    )
    own = "\n".join(converted[seg.start : seg.end] for seg in parts if seg.routes)
    lines = [line.strip() for line in quoted.split("\n") if len(line.strip()) >= 12]
    kept_out = not any(line in own for line in lines)
    return found, kept_out


def compare(mails: Sequence[Mail], *, repeat: int = 3) -> list[dict[str, Any]]:
    """One row per library (see the module docstring)."""
    rows = []
    n_quoted = sum(1 for m in mails if m.quoted)
    for library in libraries():
        row: dict[str, Any] = {
            "library": library.name,
            "licence": library.licence,
            "package": library.package,
            "how": library.how,
            "installed": library.convert is not None,
        }
        if library.convert is not None:
            best = float("inf")
            texts: list[str] = []
            for _ in range(max(repeat, 1)):
                started = time.perf_counter()
                texts = [library.convert(m.html) for m in mails]
                best = min(best, time.perf_counter() - started)
            outcomes = [quote_outcome(t, m.quoted) for t, m in zip(texts, mails, strict=True) if m.quoted]
            row.update(
                ms_per_mail=round(1000 * best / len(mails), 2),
                leaks=sum(1 for t in texts if LEAK.search(t)),
                quoted=n_quoted,
                quoted_found=sum(found for found, _ in outcomes),
                quoted_kept_out=sum(kept for _, kept in outcomes),
            )
        rows.append(row)
    return rows


def markdown_table(rows: Sequence[dict[str, Any]], *, n_mails: int) -> str:
    lines = [
        f"| library (licence) | ms/mail | mails with CSS, script or markup left (of {n_mails}) "
        "| earlier message found as quoted / kept out of the sender's text |",
        "| --- | ---: | ---: | --- |",
    ]
    for row in rows:
        if not row["installed"]:
            lines.append(
                f"| {row['library']} ({row['licence']}) | not installed (pip install {row['package']}) | | |"
            )
            continue
        lines.append(
            f"| {row['library']} ({row['licence']}) | {row['ms_per_mail']:.2f} | {row['leaks']} "
            f"| {row['quoted_found']} / {row['quoted_kept_out']} (of {row['quoted']}) |"
        )
    return "\n".join(lines)
