"""How two forms of one text are compared (the mail reader's HTML and text/plain forms, a calendar's
plain and HTML descriptions). Pure: no Django."""

from __future__ import annotations


def words(text: str) -> str:
    """`text` with its runs of whitespace as one space: what two forms of one text share."""
    return " ".join(text.split())
