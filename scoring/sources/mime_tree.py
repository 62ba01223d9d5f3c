"""Where a mail's text is among its MIME parts (scoring.sources.mail): the body part, the
multipart/alternative of which it is a form, the files inside that alternative's forms. Pure
functions of the parsed message; attached messages (message/rfc822) are not opened."""

from __future__ import annotations

from email.message import EmailMessage

# A calendar invitation (RFC 5545; text/x-vcalendar, vCalendar 1.0, names its words alike), read
# for its wording (scoring.sources.ical); so is an application/octet-stream part named .ics.
CALENDAR_TYPES = frozenset({"text/calendar", "application/ics", "text/x-vcalendar"})
BODY_PREFERENCE = ("plain", "html")
# The text/* subtypes that are a mail's text, and so may be its body: those of BODY_PREFERENCE,
# text/enriched and text/richtext (scoring.sources.mail.FORMATTED_TYPES), Markdown, and the HTML
# forms some clients show instead of text/html (Gmail's AMP, Apple Watch's: a lone one is the
# body; beside text/plain or HTML, a form read for what the text does not say). Any other text part
# (text/csv, text/calendar, text/xml...) is a file sent with the text, read as an attachment.
BODY_SUBTYPES = frozenset(
    {*BODY_PREFERENCE, "enriched", "richtext", "markdown", "x-markdown", "x-amp-html", "watch-html"}
)


def find_body(part: EmailMessage) -> EmailMessage | None:
    """The part that is the message's body, or None. The standard library's get_body prefers
    text/plain anywhere in the message, so in Mailman's multipart/mixed around an HTML-only mail
    (text/html, then the list's text/plain footer) it chose the footer, and the sender's HTML was
    listed as an attachment, not scored. Here the preference holds between the forms of one
    multipart/alternative (and inside multipart/related, both read by the standard library); in
    any other multipart (mixed, signed, report) the parts come in the sender's order (RFC 2046,
    5.1.3) and the first that holds a body is the body; the parts after it are attachments
    (scoring.sources.mail: _Reader._list_parts), so a footer is read after it."""
    if part.is_attachment():
        return None
    maintype, subtype = part.get_content_maintype(), part.get_content_subtype()
    if maintype == "text":
        return part if subtype in BODY_SUBTYPES else None
    if maintype != "multipart":
        return None
    if subtype in ("alternative", "related"):
        return part.get_body(preferencelist=BODY_PREFERENCE)
    return next((found for child in part.iter_parts() if (found := find_body(child)) is not None), None)


def body_alternative(part: EmailMessage, body: EmailMessage | None) -> EmailMessage | None:
    """The multipart/alternative of which `body` is a form, the outermost in `part` that holds it
    (attached messages not opened), or None."""
    if body is None or part.get_content_maintype() != "multipart" or not holds(part, body):
        return None
    if part.get_content_subtype() == "alternative":
        return part
    return next(
        (found for child in part.iter_parts() if (found := body_alternative(child, body)) is not None), None
    )


def form_files(form: EmailMessage, body: EmailMessage):
    """The parts of `form`, a form of the body's multipart/alternative, that are files sent with
    the text, not the text: in the body's own form every part but the body, in another form every
    part but its text (the text types a body may be, not attached nor named: Apple Mail's HTML
    fragments); in multipart/related neither the parts after the first that have a Content-ID,
    which the first shows inline (a logo, a signature's image), as in the body's own."""
    if form.get_content_maintype() != "multipart":
        return
    related = form.get_content_subtype() == "related"
    for index, part in enumerate(form.iter_parts()):
        if part is body or (related and index > 0 and part.get("Content-ID") is not None):
            continue
        if part.get_content_maintype() == "multipart":
            yield from form_files(part, body)
        elif holds(form, body) or not is_fragment(part):
            yield part


def is_calendar(part: EmailMessage) -> bool:
    """Whether `part` is a calendar invitation (CALENDAR_TYPES, or application/octet-stream named
    .ics)."""
    content_type = part.get_content_type()
    return content_type in CALENDAR_TYPES or (
        content_type == "application/octet-stream" and (part.get_filename() or "").lower().endswith(".ics")
    )


def is_fragment(part: EmailMessage) -> bool:
    """Whether `part` is (a piece of) a form's text: a text type a body may be, not attached, not
    named."""
    return (
        part.get_content_maintype() == "text"
        and part.get_content_subtype() in BODY_SUBTYPES
        and not part.is_attachment()
        and not part.get_filename()
    )


def leaves(part: EmailMessage):
    """The parts of `part` that are not multiparts, at any depth, attached messages not opened."""
    if part.get_content_maintype() == "multipart":
        for child in part.iter_parts():
            yield from leaves(child)
    else:
        yield part


def holds(part: EmailMessage, target: EmailMessage | None) -> bool:
    """Whether `target` is `part` or inside it (not looking into attached messages)."""
    if part is target:
        return True
    if part.get_content_maintype() != "multipart":
        return False
    return any(holds(child, target) for child in part.iter_parts())
