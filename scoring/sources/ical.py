"""What a calendar invitation (iCalendar, RFC 5545) says in words: `calendar_text`, read by the mail
reader (scoring.sources.mail) for a text/calendar, text/x-vcalendar or application/ics part.

Pure: no Django."""

from __future__ import annotations

import re

from scoring.sources.html import html_to_text
from scoring.sources.wording import Said, unsaid_lines, words

_ICAL_FIELDS = {
    "SUMMARY": "Title",
    "LOCATION": "Location",
    "DESCRIPTION": "Description",
    "COMMENT": "Comment",
}
_ICAL_ESCAPE = re.compile(r"\\([\\;,nN])")
# RFC 5545, 3.1: contentline = name *(";" param) ":" value. A parameter's value may be a quoted
# string, which may hold ":" and ";" (ALTREP="cid:part1@example.org"), so the value starts at the
# first colon outside quotes. Each character has one reading (a quote opens or closes a string),
# so a line that does not match fails in linear time.
_ICAL_LINE = re.compile(r'\s*(?P<name>[A-Za-z0-9-]+)(?P<params>(?:;(?:[^";:]|"[^"]*")*)*):(?P<value>.*)')
# Outlook's HTML form of a description (X-ALT-DESC;FMTTYPE=text/html:<html>...); it usually
# repeats the DESCRIPTION, and is read only when it says something else (calendar_text).
_ICAL_ALT_DESCRIPTION = "X-ALT-DESC"
_ICAL_HTML = re.compile(r'(?i);FMTTYPE="?text/html"?(?:;|$)')


def calendar_text(ical: str) -> str:
    """What a calendar invitation (iCalendar, RFC 5545) says in words: each of its
    calendar_fields as "Label: value", one after the other."""
    return "\n".join(f"{label}: {value}" for label, value in calendar_fields(ical))


def calendar_fields(ical: str) -> list[tuple[str, str]]:
    """(label, value) of each field of a calendar invitation that says something in words: each
    event's title, location, description and comment, unfolded and unescaped, without the
    properties' parameters (_ICAL_LINE); its codes and times left out. Outlook's HTML description
    (X-ALT-DESC, converted to text) is read as "Description (HTML)" only when its text is not
    that of a DESCRIPTION of the invitation, whitespace aside: usually it repeats it."""
    unfolded = re.sub(r"\r?\n[ \t]", "", ical)
    found = []  # (label, value, whether it is an HTML description)
    for line in unfolded.splitlines():
        parsed = _ICAL_LINE.match(line)
        if parsed:
            name, params, value = parsed["name"], parsed["params"], parsed["value"]
        else:  # against the grammar (a quote never closed): cut at the first colon, not dropped
            name, _, value = line.partition(":")
            name, _, params = name.partition(";")
            params = f";{params}"
        name = name.strip().upper()
        label = _ICAL_FIELDS.get(name)
        if not (label or name == _ICAL_ALT_DESCRIPTION) or not value.strip():
            continue
        value = _ICAL_ESCAPE.sub(lambda m: "\n" if m.group(1) in "nN" else m.group(1), value)
        if label:
            found.append((label, value.strip(), False))
        else:
            found.append(
                ("Description (HTML)", html_to_text(value) if _ICAL_HTML.search(params) else value, True)
            )
    descriptions = {words(value) for label, value, _ in found if label == "Description"}
    return [
        (label, value.strip())
        for label, value, alternative in found
        if not alternative or (words(value) and words(value) not in descriptions)
    ]


def calendar_text_beside(ical: str, text: str) -> str:
    """The calendar_text of an invitation sent as a form of `text` (Google's and Outlook's
    text/calendar beside the text/plain and HTML forms of the message): of each field, only the
    lines that `text` does not say (wording.unsaid_lines), so that what both say is read once."""
    fields = []
    said = Said(text)  # once, not once per field
    for label, value in calendar_fields(ical):
        unsaid = unsaid_lines(value, said).strip()
        if unsaid:
            fields.append(f"{label}: {unsaid}")
    return "\n".join(fields)
