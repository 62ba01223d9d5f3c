"""RTF (text/rtf, application/rtf, a `.rtf` file) to plain text, with striprtf.

RTF is markup: read as written, a sentence is cut by control words (`\\b`, `\\par`), its accented
letters are escapes (`\\'e9`, `\\u8364?`) and a picture is pages of hex. striprtf drops the
destinations that are not text (font and colour tables, pictures, document info), decodes the
escapes by the document's code page (`\\ansicpg`, a font's `\\fcharset`) and keeps the paragraphs.
It read a 5 MB document (mostly a picture's hex) in 1.1 s on a shared 2-core AMD EPYC, so an
attachment at the size limit (10 MB) costs about two seconds; nested groups are a list, not a
recursion.

A part labelled RTF that does not start with `{\\rtf` is not RTF: it is read as the text it is.
What striprtf cannot read raises RtfError, which the caller lists as unreadable."""

from __future__ import annotations

from striprtf.striprtf import rtf_to_text

RTF_TYPES = frozenset({"text/rtf", "application/rtf", "application/x-rtf"})
RTF_SUFFIX = ".rtf"


class RtfError(ValueError):
    """The RTF could not be read (the reason is striprtf's)."""


def is_rtf(text: str) -> bool:
    """Whether `text` is an RTF document (it starts with `{\\rtf`, after any whitespace)."""
    return text.lstrip().startswith("{\\rtf")


def rtf_plain_text(text: str) -> str:
    """The words of the RTF document `text`, its paragraphs one per line; `text` itself when it is
    not RTF (is_rtf). Characters a code page cannot give are replaced (U+FFFD), not refused."""
    if not is_rtf(text):
        return text
    try:
        return rtf_to_text(text, errors="replace")
    except (ValueError, LookupError, IndexError, TypeError) as exc:
        raise RtfError(f"the RTF cannot be read ({exc})") from exc
