"""One RFC 5322 message (MIME) read into a SourceMessage, or refused with a specific SourceError.

Parsed with the standard library (`email.parser.BytesParser`, policy `default`, whose header
objects are cached per (name, value): the parser asks for a part's Content-Type about ten times
and re-parses it each time, which made parsing six times slower). What is kept:

- From, To, Cc, Subject, Date, Message-ID, In-Reply-To and References;
- the text: the body part (find_body): multipart/alternative gives its text/plain (its HTML
  form when the text/plain form says less: _Reader._choose_form) and an HTML-only mail its HTML
  converted to text (scoring.sources.html), also when a list server wraps
  it in multipart/mixed before its text/plain footer; a text/enriched or text/richtext body is read
  without its formatting (scoring.sources.enriched), a text/markdown one as written
  (mime_tree.BODY_SUBTYPES); quoted-printable and base64 decoded, charsets as scoring.sources.charsets
  says. Base64 the standard library cannot decode is never shown or scored as its letters without
  a word: one letter too many at the end (six bits, less than a byte) is dropped, a part declared
  base64 that is not base64 at all (plain text under a wrong label) is read as written, and
  letters outside the alphabet inside real base64 are skipped, each with a note the reviewer sees;
- attachments, each with its name, type and size; text attachments (text/plain, text/csv, a .txt
  or .csv name, any other text/* but those of UNREAD_TEXT_TYPES, RTF among them; text/html,
  text/enriched and text/richtext without their formatting, unless they repeat the body's text,
  whitespace aside) are read and scored as part of the message, so is the wording of a calendar
  invitation (text/calendar: its title, location, description and comment, and Outlook's HTML
  description when it says something else: scoring.sources.ical; an invitation sent alone has no
  other text, whether as text/calendar or as a multipart/alternative of text/calendar and its
  application/ics copy, which is listed and not read again; an application/ics attachment is read
  so too unless a text/calendar part of the message says the same), so are the words of a PDF or
  a Word, PowerPoint or Excel file (scoring.sources.documents), the text files and documents
  inside a zip attachment and the text of an attached message (message/rfc822, a forward as
  attachment); anything else is listed as not scored, with the reason (marked `unreadable` when
  it is text that could not be read: a charset, a password-protected or broken zip or document;
  the import reports those). An attachment whose text would take the body past
  `max_body_chars` is listed so too, the longest first (_fit), and the message kept. Of a
  multipart/alternative that is not the body's, one form is read (_Reader._list_forms); of the
  body's, the files inside its forms are listed and read as attachments (Apple Mail's HTML form
  holds them: _Reader._list_body_forms),
  and a third form that says more than the text (AMP, Apple Watch: _Reader._other_form) is read
  for the lines the text does not say.

The message's `body` is its text followed by each scored attachment, under a line
"[Attachment: name · type · size]"; `attachments` gives each one's [start, end) in the body
(scoring.services.context scores each as a part of its own, which routes like the body).

Refused, before anything is stored (code in brackets): a message over the size limit
(message_too_large), more MIME parts than the limit (too_many_parts, checked on the raw bytes
before parsing, so a deeply nested bomb costs nothing), message/rfc822 nested deeper than the
limit (nested_too_deep) or an attached message that repeats the Message-ID of a message it is
inside (message_loop), a broken MIME structure (malformed_mime: no boundary, a boundary that
never starts or never closes), bytes with no header at all (not_an_email), no text anywhere
(no_text_part: a part of only whitespace, control or format characters and the like has none,
by the scorer's rule, scoring.text.has_content; encrypted when the only body is S/MIME or PGP
sealed), an attachment over the size limit
(attachment_too_large), a zip attachment that would expand past the limits (archive_bomb), a
charset that cannot be read (unknown_charset, charset_mismatch) in the body (a text/plain form
beside a readable HTML form gives that form, noted: _Reader._read_body), or in an attachment
when the message has no other text; an attachment's alone is listed as not scored, with the reason
(CHARSET_ERRORS).

NUL characters (U+0000) are removed from everything read: the text, the attachments' text and
names, the headers kept. In a decoded mail part a NUL is not the sender's text but a trace of
how it was made (UTF-16 text read under a single-byte label, a C string's padding, a client's
RTF conversion) and shows as nothing; refusing the mail for it would leave a real message
unmonitored, and keeping it would fail on PostgreSQL, whose text and jsonb hold no NUL. (The JSON
API refuses a NUL in a body instead, 400: a feed writes its own text and can correct it.)"""

from __future__ import annotations

import base64
import hashlib
import io
import lzma
import re
import zipfile
import zlib
from dataclasses import dataclass, replace
from email import errors as email_errors
from email import policy
from email.headerregistry import HeaderRegistry
from email.message import EmailMessage
from email.parser import BytesParser
from functools import lru_cache
from typing import NamedTuple

from scoring.sources.charsets import decode_text
from scoring.sources.documents import (
    KIND_BY_SUFFIX,
    LABELS,
    PDF,
    TYPE_OF_KIND,
    DocumentLimits,
    UnreadableDocument,
    document_kind,
    document_text,
    human_size,
)
from scoring.sources.enriched import enriched_to_text
from scoring.sources.errors import SourceError
from scoring.sources.html import html_to_text
from scoring.sources.ical import calendar_text, calendar_text_beside
from scoring.sources.mail_headers import (
    address_only,
    addresses,
    header_text,
    message_ids,
    sender_address,
    sent_date,
    without_nul,
)
from scoring.sources.mime_tree import (
    body_alternative,
    find_body,
    form_files,
    holds,
    is_calendar,
    is_fragment,
    leaves,
)
from scoring.sources.types import Attachment, SourceMessage
from scoring.sources.wording import lacking, says_more, unsaid_lines
from scoring.text import has_content


@dataclass(frozen=True)
class MailLimits:
    """The limits of one message (settings: EMAIL_*; scoring.services.sources.mail_limits)."""

    max_message_bytes: int = 25 * 1024 * 1024
    max_attachment_bytes: int = 10 * 1024 * 1024
    max_parts: int = 200
    max_depth: int = 5
    max_archive_bytes: int = 20 * 1024 * 1024
    max_archive_ratio: int = 100
    max_archive_members: int = 1000
    max_document_pages: int = 500
    # The most a message's body holds (settings.MAX_BODY_CHARS, which ingest enforces): a part whose
    # text would take the body past it is listed as not read instead (_fit), the message kept.
    max_body_chars: int = 100_000

    def documents(self) -> DocumentLimits:
        """The limits a PDF or Office attachment is read under (scoring.sources.documents)."""
        return DocumentLimits(
            max_pages=self.max_document_pages,
            max_chars=self.max_body_chars,
            max_archive_bytes=self.max_archive_bytes,
            max_archive_ratio=self.max_archive_ratio,
            max_archive_members=self.max_archive_members,
        )


class _CachingRegistry(HeaderRegistry):
    """policy.default's header registry, remembering the header objects it made (they are
    immutable): the feed parser asks for each part's Content-Type many times."""

    def __init__(self) -> None:
        super().__init__()
        self._cached = lru_cache(maxsize=4096)(super().__call__)

    def __call__(self, name: str, value: str):
        return self._cached(name, value)


POLICY = policy.default.clone(header_factory=_CachingRegistry())
TEXT_ATTACHMENT_TYPES = frozenset({"text/plain", "text/csv"})
# Text with formatting, read without it (part_text): HTML, and text/enriched (RFC 1896) and
# text/richtext (RFC 1341), the formatted mail of before HTML.
# HTML by another name: the forms some clients show instead of a body's HTML form (Gmail's AMP
# form; Apple Watch's), read without their markup as HTML is (part_text).
OTHER_FORMS = {"text/x-amp-html": "AMP", "text/watch-html": "Apple Watch"}
HTML_TYPES = frozenset({"text/html", *OTHER_FORMS})
FORMATTED_TYPES = frozenset({*HTML_TYPES, "text/enriched", "text/richtext"})
# The text/* types that are not read as text: markup that needs its own reader, which the product
# does not have (RTF: read as written, its text would be lost among control words and \'e9
# escapes), and a returned message's header block (a bounce's; no text of the sender's but the
# subject, which is never scored). Any other text/* part (text/markdown, text/xml, text/vcard,
# text/x-log...) is read as it is written.
UNREAD_TEXT_TYPES = {
    "text/rtf": "not scored: RTF markup (text/rtf), which is not read: there is no RTF reader",
    "text/rfc822-headers": "not scored: the header block of a returned message",
}
TEXT_ATTACHMENT_SUFFIXES = (".txt", ".csv")
# A charset that cannot be read (scoring.sources.charsets) refuses the message when it is its
# body's (README, "Bad input"); an attachment's, or an attached message's text's, is listed as
# not scored with the reason, and the rest of the message is read.
CHARSET_ERRORS = frozenset({"unknown_charset", "charset_mismatch"})
# A body only the recipient's key opens (S/MIME enveloped or opaque-signed, PGP/MIME encrypted).
SEALED_TYPES = frozenset(
    {"application/pkcs7-mime", "application/x-pkcs7-mime", "multipart/encrypted", "application/pgp-encrypted"}
)
# What the lines of a body's text/plain form read after its HTML form are listed as (_choose_form).
PLAIN_FORM_NAME = "text/plain form of the body"
ARCHIVE_TYPES = frozenset({"application/zip", "application/x-zip-compressed", "application/x-zip"})
_STRUCTURE_DEFECTS = (
    email_errors.NoBoundaryInMultipartDefect,
    email_errors.StartBoundaryNotFoundDefect,
    email_errors.CloseBoundaryNotFoundDefect,
    email_errors.MultipartInvariantViolationDefect,
    email_errors.InvalidMultipartContentTransferEncodingDefect,
)
_DEFECT_TEXT = {
    email_errors.NoBoundaryInMultipartDefect: "it is declared multipart but names no boundary",
    email_errors.StartBoundaryNotFoundDefect: "its boundary never appears in the body",
    email_errors.CloseBoundaryNotFoundDefect: "its closing boundary is missing (the message is cut short)",
    email_errors.MultipartInvariantViolationDefect: "it is declared multipart but holds no parts",
    email_errors.InvalidMultipartContentTransferEncodingDefect: (
        "a multipart part has a Content-Transfer-Encoding other than 7bit, 8bit or binary"
    ),
}
_CONTAINER_HEADER = re.compile(rb"(?im)^content-type:[ \t]*(?:multipart|message)/")
_NOT_BASE64 = re.compile(rb"[^A-Za-z0-9+/=]")
_BASE64_DEFECTS = frozenset(
    {email_errors.InvalidBase64LengthDefect, email_errors.InvalidBase64CharactersDefect}
)
# Real base64 damaged in transport has the odd stray character; text under a wrong
# Content-Transfer-Encoding label has a space every few letters.
BASE64_STRAY_SHARE = 0.02


_CLEARSIGN_HEAD = re.compile(
    r"^-----BEGIN PGP SIGNED MESSAGE-----[ \t]*\n(?:[A-Za-z-]+: .*\n)*[ \t]*\n", re.M
)
_CLEARSIGN_TAIL = re.compile(
    r"^-----BEGIN PGP SIGNATURE-----[ \t]*\n.*?^-----END PGP SIGNATURE-----[ \t]*$", re.M | re.S
)


def _without_clearsign_armour(text: str) -> str:
    """An inline PGP clear-signed text (RFC 4880, 7) as its sender wrote it: the armour header and
    its Hash: lines and the signature block removed, dash-escaped lines ("- -- ") unescaped, so
    the base64 of the signature is not read as the sender's signature block. Text around the
    signed part is kept. Anything else is returned unchanged."""
    head = _CLEARSIGN_HEAD.search(text)
    if head is None:
        return text
    tail = _CLEARSIGN_TAIL.search(text, head.end())
    if tail is None:
        return text
    signed = re.sub(r"(?m)^- ", "", text[head.end() : tail.start()])
    return text[: head.start()] + signed + text[tail.end() :]


@dataclass
class _Scope:
    """Where the parts being listed are: the message holding them (an attached message is a scope
    of its own), the prefix of their names, the Message-IDs around them, the nesting depth, the
    text of its body as read (an HTML part that says the same is not read again), the text/plain
    form and the lines of it read after an HTML one that is the text (_Reader._choose_form), and
    how many parts have
    been listed (a part with no name is "part-N")."""

    message: EmailMessage
    prefix: str
    ancestors: tuple[str, ...]
    depth: int
    body_text: str = ""
    beside: tuple[EmailMessage, str] | None = None
    listed: int = 0


class _Body(NamedTuple):
    """What body_and_attachments read of a message's body: its text, the type of the part it was
    read from ("" when there is none) and why the body part was not read ("" when it was)."""

    text: str
    text_from: str
    unread: str


class _Reader:
    """State of reading one message: the limits, the parts counted, notes, attachments."""

    def __init__(self, limits: MailLimits) -> None:
        self.limits = limits
        self.notes: list[str] = []
        self.attachments: list[tuple[Attachment, str]] = []  # (attachment, its text or "")
        self.parts = 0
        # The charset errors of the parts left unread (CHARSET_ERRORS): a message with no other
        # text is refused with the first, as a message whose body it is.
        self.unreadable: list[SourceError] = []
        self._calendars: dict[int, frozenset[str]] = {}  # _calendar_wordings, by id of the message

    # --- structure ------------------------------------------------------------------------

    def check_structure(self, part: EmailMessage, ancestors: tuple[str, ...], depth: int) -> None:
        """Count the parts, refuse a broken structure, an attached-message loop and nesting
        deeper than the limit (recursion bounded by max_parts)."""
        self.parts += 1
        if self.parts > self.limits.max_parts:
            raise SourceError(
                "too_many_parts", f"the message has more than {self.limits.max_parts} MIME parts."
            )
        broken = [d for d in part.defects if isinstance(d, _STRUCTURE_DEFECTS)]
        if broken:
            what = "; ".join(dict.fromkeys(_DEFECT_TEXT[type(d)] for d in broken))
            raise SourceError(
                "malformed_mime",
                f"malformed MIME structure in part {self.parts} ({part.get_content_type()}): {what}.",
            )
        if part.get_content_type() == "message/rfc822" and part.is_multipart():
            for inner in part.get_payload():
                inner_id = "".join(message_ids(header_text(inner, "Message-ID"))[:1])
                if inner_id and inner_id in ancestors:
                    raise SourceError(
                        "message_loop",
                        f"part {self.parts} (message/rfc822) holds the message <{inner_id}> inside "
                        "itself: a message/rfc822 loop.",
                    )
                if depth + 1 > self.limits.max_depth:
                    raise SourceError(
                        "nested_too_deep",
                        "attached messages (message/rfc822) are nested more than "
                        f"{self.limits.max_depth} deep.",
                    )
                self.check_structure(inner, (*ancestors, inner_id) if inner_id else ancestors, depth + 1)
        elif part.is_multipart():
            for child in part.get_payload():
                self.check_structure(child, ancestors, depth)

    # --- text ------------------------------------------------------------------------------

    def payload(self, part: EmailMessage, where: str) -> bytes:
        """A part's bytes with its Content-Transfer-Encoding undone; base64 that cannot be
        decoded as it stands is repaired or read as written, with a note (module docstring)."""
        seen = len(part.defects)
        data = part.get_payload(decode=True) or b""
        found = {type(d) for d in part.defects[seen:]} & _BASE64_DEFECTS
        if not found:
            return data
        written = str(part.get_payload()).encode("ascii", "surrogateescape")
        cleaned = re.sub(rb"\s+", b"", written)
        strays = len(_NOT_BASE64.findall(cleaned))
        # Whitespace at a line's edges is padding RFC 2045 ignores; spaces between letters inside
        # a line, like characters outside the alphabet, are not base64.
        inner_spaces = sum(len(re.findall(rb"\S\s+(?=\S)", line.strip())) for line in written.splitlines())
        if strays + inner_spaces > BASE64_STRAY_SHARE * max(1, len(cleaned)):  # text under a wrong label
            self.notes.append(f"{where}: it is declared base64 but is not base64; read as written.")
            return written
        # Each padded run on its own: two base64 texts joined end to end are both read (the
        # standard library stops at the first padding), and a run with one letter too many (six
        # bits, less than a byte) loses only that letter.
        decoded, dropped = [], False
        runs = re.findall(rb"[A-Za-z0-9+/]+=*", _NOT_BASE64.sub(b"", cleaned))
        for run in runs:
            letters = run.rstrip(b"=")
            if len(letters) % 4 == 1:
                letters, dropped = letters[:-1], True
            decoded.append(base64.b64decode(letters + b"=" * (-len(letters) % 4)))
        if len(runs) > 1:
            self.notes.append(f"{where}: {len(runs)} base64 texts joined end to end; each was decoded.")
        if dropped:
            self.notes.append(f"{where}: its base64 ends with one letter too many, which was dropped.")
        if strays:
            what = "1 character that is" if strays == 1 else f"{strays} characters that are"
            self.notes.append(f"{where}: {what} not base64 skipped while decoding it.")
        return b"".join(decoded)

    def part_text(self, part: EmailMessage, where: str, data: bytes | None = None) -> str:
        """The text of a text part (its bytes: `data`, else its payload), without the formatting
        of HTML, text/enriched or text/richtext."""
        if data is None:
            data = self.payload(part, where)
        text, note = decode_text(data, part.get_content_charset(), where=where)
        if note:
            self.notes.append(note)
        content_type = part.get_content_type()
        if content_type in HTML_TYPES:
            text = html_to_text(text)
        elif content_type in ("text/enriched", "text/richtext"):
            text = enriched_to_text(text, richtext=content_type == "text/richtext")
        text = without_nul(text.replace("\r\n", "\n").replace("\r", "\n"))
        unarmoured = _without_clearsign_armour(text)
        if unarmoured != text:
            self.notes.append(
                f"{where}: inline PGP signature armour removed (the signature is not verified)."
            )
        return unarmoured

    # --- attachments -----------------------------------------------------------------------

    def _calendar_wordings(self, message: EmailMessage) -> frozenset[str]:
        """The wording (calendar_text) of each text/calendar part of `message`, attached messages
        left out, read once per message and without notes (the part is read for its own later)."""
        key = id(message)
        if key not in self._calendars:
            found, notes = set(), len(self.notes)
            for part in leaves(message):
                if part.get_content_type() == "text/calendar":
                    data = self.payload(part, "")
                    try:
                        text, _ = decode_text(data, part.get_content_charset(), where="")
                    except SourceError:
                        continue
                    found.add(calendar_text(text))
            del self.notes[notes:]
            self._calendars[key] = frozenset(found - {""})
        return self._calendars[key]

    def attachment(self, part: EmailMessage, scope: _Scope, *, form_of: str | None = None) -> None:
        """List `part`, a part of the message `scope.message`, and read it if it is text; an
        invitation that is a form of the body's text, `form_of`, for what that text does not say."""
        scope.listed += 1
        index, prefix, ancestors, depth = scope.listed, scope.prefix, scope.ancestors, scope.depth
        content_type = part.get_content_type()
        name = part.get_filename() or ""
        if content_type == "message/rfc822":
            inner = part.get_payload()[0] if part.is_multipart() else None
            subject = header_text(inner, "Subject") if inner is not None else ""
            name = name or f"{subject or 'attached message'}.eml"
            self._attached_message(part, inner, prefix + name, ancestors, depth)
            return
        calendar = is_calendar(part)
        if calendar and not name:
            name = "invitation.ics"
        name = prefix + (name or f"part-{index}")
        # message/delivery-status and the like are parsed as header blocks: counted whole.
        data = part.as_bytes() if part.is_multipart() else self.payload(part, f"the attachment {name!r}")
        if len(data) > self.limits.max_attachment_bytes:
            raise SourceError(
                "attachment_too_large",
                f"the attachment {name!r} is {human_size(len(data))}; the limit is "
                f"{human_size(self.limits.max_attachment_bytes)}.",
            )
        try:
            self._read(part, name, content_type, data, calendar, scope, form_of)
        except SourceError as error:
            if error.code not in CHARSET_ERRORS:
                raise
            # Not the body: the rest of the message is read, this part listed with the reason.
            self.unreadable.append(error)
            self._add(_unreadable(name, content_type, len(data), error.message), "")

    def _read(
        self,
        part: EmailMessage,
        name: str,
        content_type: str,
        data: bytes,
        calendar: bool,
        scope: _Scope,
        form_of: str | None,
    ) -> None:
        """Read `part`, an attachment named `name` whose bytes are `data` (attachment)."""
        lowered = name.lower()
        if calendar:
            text, note = decode_text(data, part.get_content_charset(), where=f"the invitation {name!r}")
            wording = calendar_text(text)
            # Google sends an invitation twice: text/calendar (in the body's multipart/alternative)
            # and its copy, application/ics (invite.ics). The copy is read only when no
            # text/calendar part of the message has the same wording; alone, it is the invitation.
            copy = content_type != "text/calendar" and wording in self._calendar_wordings(scope.message)
            if copy:
                self._add(
                    Attachment(
                        name,
                        content_type,
                        len(data),
                        False,
                        "not scored: a copy of the invitation in the message's text/calendar part",
                    ),
                    "",
                )
                return
            if form_of is not None:
                # A form of the body's text (Google's and Outlook's text/calendar beside the
                # text/plain and HTML forms): read for what the text does not say, the rest once.
                wording = calendar_text_beside(text, form_of)
                if not has_content(wording):
                    note = "not scored: the message's text says what the invitation says"
                    self._add(Attachment(name, content_type, len(data), False, note), "")
                    return
            if note:
                self.notes.append(note)
            self._add(Attachment(name, content_type, len(data), True, ""), wording)
        elif content_type in FORMATTED_TYPES:
            text = self.part_text(part, f"the attachment {name!r}", data)
            # An HTML part after a text/plain body in multipart/mixed (not multipart/alternative, as
            # it should be) is that text's other form when neither says more than the other
            # (wording.says_more, as between the forms of multipart/alternative: a link's address
            # spelt out in one form only is not a difference); then only its lines that the text
            # does not say are read.
            body = scope.body_text
            if (
                has_content(text)
                and has_content(body)
                and not (says_more(text, body) or says_more(body, text))
            ):
                form = "HTML" if content_type == "text/html" else content_type
                unsaid = unsaid_lines(text, body).strip()
                if not has_content(unsaid):
                    note = f"not scored: the {form} form of the message's text, which is read"
                    self._add(Attachment(name, content_type, len(data), False, note), "")
                    return
                self.notes.append(
                    f"the attachment {name!r} is the {form} form of the message's text: only the lines "
                    "of it that the text does not say are read."
                )
                text = unsaid
            self._add(Attachment(name, content_type, len(data), True, ""), text)
        elif (
            content_type in TEXT_ATTACHMENT_TYPES
            or lowered.endswith(TEXT_ATTACHMENT_SUFFIXES)
            or (part.get_content_maintype() == "text" and content_type not in UNREAD_TEXT_TYPES)
        ):
            text, note = decode_text(data, part.get_content_charset(), where=f"the attachment {name!r}")
            if note:
                self.notes.append(note)
            self._add(Attachment(name, content_type, len(data), True, ""), text)
        elif (kind := document_kind(content_type, lowered)) is not None:
            self._document(name, content_type, data, kind)
        elif content_type in ARCHIVE_TYPES or lowered.endswith(".zip"):
            self._archive(name, content_type, data)
        else:
            note = UNREAD_TEXT_TYPES.get(content_type, f"not scored: {content_type} is not text")
            self._add(Attachment(name, content_type, len(data), False, note), "")

    def _document(self, name: str, content_type: str, data: bytes, kind: str) -> None:
        """A PDF or Office file (scoring.sources.documents): its words read as the attachment's
        text; one whose text cannot be read is listed as unreadable (it sends the message to
        review), one with no text (a scanned PDF) as not scored, as an image is."""
        try:
            text = document_text(data, kind, limits=self.limits.documents())
        except UnreadableDocument as exc:
            self._add(_unreadable(name, content_type, len(data), str(exc)), "")
            return
        if not has_content(text):
            why = "no text layer (scanned pages or images only)" if kind == PDF else "no words"
            note = f"not scored: the {LABELS[kind]} has {why}"
            self._add(Attachment(name, content_type, len(data), False, note), "")
            return
        self._add(Attachment(name, content_type, len(data), True, ""), text)

    def _add(self, attachment: Attachment, text: str) -> None:
        named = replace(attachment, name=without_nul(attachment.name))
        self.attachments.append((named, without_nul(text.replace("\r\n", "\n"))))

    def _attached_message(self, part, inner, name: str, ancestors, depth: int) -> None:
        size = len(part.as_bytes()) if inner is not None else 0
        if inner is None:
            self._add(
                Attachment(name, "message/rfc822", size, False, "not scored: empty attached message"), ""
            )
            return
        own_id = "".join(message_ids(header_text(inner, "Message-ID")))
        chain = (*ancestors, own_id) if own_id else ancestors
        body = self.body_and_attachments(inner, chain, depth + 1, prefix=f"{name}/")
        text = body.text
        header = "\n".join(
            f"{label}: {value}"
            for label, value in (
                ("From", header_text(inner, "From")),
                ("Sent", header_text(inner, "Date")),
                ("To", header_text(inner, "To")),
                ("Subject", header_text(inner, "Subject")),
            )
            if value
        )
        self._add(
            Attachment(
                name,
                "message/rfc822",
                size,
                has_content(text),
                ""
                if has_content(text)
                else f"not scored: its text cannot be read: {body.unread}"
                if body.unread
                else "not scored: no text",
                unreadable=not has_content(text) and bool(body.unread),
            ),
            f"{header}\n\n{text}".strip(),
        )

    def _archive(self, name: str, content_type: str, data: bytes) -> None:
        limits = self.limits
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
            members = archive.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            self._add(_unreadable(name, content_type, len(data), f"not a readable zip archive ({exc})"), "")
            return
        if len(members) > limits.max_archive_members:
            raise SourceError(
                "archive_bomb",
                f"the zip attachment {name!r} holds {len(members):,} files; the limit is "
                f"{limits.max_archive_members:,}.",
            )
        declared = sum(m.file_size for m in members)
        ratio = declared / max(1, len(data))
        if declared > limits.max_archive_bytes or ratio > limits.max_archive_ratio:
            raise SourceError(
                "archive_bomb",
                f"the zip attachment {name!r} ({human_size(len(data))}) would expand to "
                f"{human_size(declared)} (ratio {ratio:,.0f}:1); the limits are "
                f"{human_size(limits.max_archive_bytes)} and {limits.max_archive_ratio}:1. Refused as a zip "
                "bomb.",
            )
        self._add(
            Attachment(name, content_type, len(data), False, "archive: its text files are listed after it"),
            "",
        )
        budget = limits.max_archive_bytes
        for member in members:
            if member.is_dir():
                continue
            member_name = f"{name}/{member.filename}"
            kind = _document_in_archive(member.filename)
            if not member.filename.lower().endswith(TEXT_ATTACHMENT_SUFFIXES) and kind is None:
                self._add(
                    Attachment(
                        member_name,
                        "application/octet-stream",
                        member.file_size,
                        False,
                        "not scored: not a text file",
                    ),
                    "",
                )
                continue
            member_type = TYPE_OF_KIND[kind] if kind is not None else "text/plain"
            if member.flag_bits & 0x1:  # encrypted (ZipCrypto or AES): its text needs the password
                why = "password-protected: its text cannot be read without the password"
                self._add(_unreadable(member_name, member_type, member.file_size, why), "")
                continue
            try:
                with archive.open(member) as handle:
                    # Read no more than the budget left, whatever the member's header claims.
                    content = handle.read(budget + 1)
            except (
                zipfile.BadZipFile,
                OSError,
                ValueError,
                NotImplementedError,
                RuntimeError,
                EOFError,
                zlib.error,
                lzma.LZMAError,
            ) as exc:
                self._add(_unreadable(member_name, member_type, member.file_size, f"unreadable ({exc})"), "")
                continue
            budget -= len(content)
            if budget < 0:
                raise SourceError(
                    "archive_bomb",
                    f"the zip attachment {name!r} expands past {human_size(limits.max_archive_bytes)}, more "
                    "than its directory declares. Refused as a zip bomb.",
                )
            if kind is not None and not member.filename.lower().endswith(TEXT_ATTACHMENT_SUFFIXES):
                self._document(member_name, member_type, content, kind)  # a PDF or Office file
                continue
            text, note = decode_text(content, None, where=f"the file {member_name!r}")
            if note:
                self.notes.append(note)
            content_type_of = "text/csv" if member_name.lower().endswith(".csv") else "text/plain"
            self._add(Attachment(member_name, content_type_of, len(content), True, ""), text)

    # --- the whole message -----------------------------------------------------------------

    def body_and_attachments(
        self, message: EmailMessage, ancestors: tuple[str, ...], depth: int, prefix: str = ""
    ) -> _Body:
        """The text of the message's body part (_Body); its attachments (every part that is not
        the body nor one of its other forms: _list_parts) go to self.attachments. The body of an
        attached message (depth > 0) whose charset cannot be read is left unread, with the reason:
        it is an attachment's text; the message's own is refused (CHARSET_ERRORS)."""
        body_part = find_body(message)
        text, unread, text_from, beside = "", "", "", None
        if body_part is not None:
            text_from = body_part.get_content_type()
            try:
                # inside the try: an empty text/plain form beside an HTML form whose charset cannot
                # be read leaves an attached message unread, as its text/plain body would
                text, text_from, beside = self._read_body(message, body_part, text_from)
            except SourceError as error:
                if depth == 0 or error.code not in CHARSET_ERRORS:
                    raise
                self.unreadable.append(error)
                unread = error.message
        scope = _Scope(message, prefix, ancestors, depth, body_text=text, beside=beside)
        if message.get_content_type() == "message/rfc822":  # the whole message is a forward
            self.attachment(message, scope)
            return _Body(text.strip(), "", unread)
        if not message.is_multipart():
            if body_part is None:  # a lone part that is not a body (Content-Disposition: attachment)
                self.attachment(message, scope)
            return _Body(text.strip(), text_from, unread)
        if message.get_content_subtype() != "alternative":
            self._list_parts(message, body_part, scope)
        elif body_part is None:
            # A multipart/alternative's parts are its body's forms, not listed; one with no
            # text/plain or text/html form (an invitation sent alone: text/calendar and its
            # application/ics copy) has one of its forms read as an attachment (_list_forms).
            self._list_forms(message, scope)
        else:
            self._list_body_forms(message, body_part, scope)
        return _Body(text.strip(), text_from, unread)

    def _read_body(
        self, message: EmailMessage, body_part: EmailMessage, text_from: str
    ) -> tuple[str, str, tuple[EmailMessage, str] | None]:
        """(text, the type it is read from, the text/plain form read after it) of the body part
        (_choose_form). A text/plain form whose charset cannot be read gives the HTML form of its
        multipart/alternative (else its AMP or Apple Watch form: OTHER_FORMS), with a note: the mail
        was refused although the form its recipient sees could be read. Without a readable one,
        the text/plain form's error refuses it."""
        alternative = body_alternative(message, body_part) if text_from == "text/plain" else None
        try:
            text = self.part_text(body_part, f"the {text_from} body")
        except SourceError as error:
            if alternative is None or error.code not in CHARSET_ERRORS:
                raise
            noted = len(self.notes)
            for read_from in ("text/html", *OTHER_FORMS):  # what the recipient's client would show
                try:
                    if read_from == "text/html":
                        html_text = self._html_form_text(alternative, body_part)
                    else:
                        html_text = self._third_form_text(alternative, read_from)
                except SourceError:
                    html_text = None
                if html_text and has_content(html_text):
                    kind = OTHER_FORMS.get(read_from, "HTML")
                    self.notes.insert(noted, f"{error.message} Its {kind} form is read.")
                    return html_text, read_from, None
                del self.notes[noted:]
            raise error from None
        if alternative is None:
            return text, text_from, None
        return self._choose_form(alternative, body_part, text)

    def _html_form_text(self, alternative: EmailMessage, plain: EmailMessage) -> str | None:
        """The text of the HTML form of `alternative`, a body's multipart/alternative whose
        text/plain form is `plain`: that of its HTML parts, one after the other (Apple Mail's is
        in pieces around its files: form_files). None when it has no HTML form of its own."""
        html = alternative.get_body(preferencelist=("html",))
        form = next((f for f in alternative.iter_parts() if holds(f, html)), None)
        if html is None or form is None or holds(form, plain):
            return None
        pieces = [p for p in leaves(form) if p.get_content_type() == "text/html" and is_fragment(p)]
        return "\n\n".join(self.part_text(p, "the HTML form of the body") for p in pieces).strip()

    def _third_form_text(self, alternative: EmailMessage, content_type: str) -> str | None:
        """The text of the first form of `alternative` of `content_type` (OTHER_FORMS), or None."""
        part = next((p for p in leaves(alternative) if p.get_content_type() == content_type), None)
        return (
            None
            if part is None
            else self.part_text(part, f"the {OTHER_FORMS[content_type]} form of the body")
        )

    def _choose_form(
        self, alternative: EmailMessage, plain: EmailMessage, plain_text: str
    ) -> tuple[str, str, tuple[EmailMessage, str] | None]:
        """(text, the type it is read from, the text/plain form and its text when it is read after
        the text) of a body whose multipart/alternative has a text/plain form, `plain`, and maybe
        an HTML one. The text/plain form is the text, as get_body chooses, unless the HTML form's
        text says more (wording.says_more: the text/plain form is empty, or lacks FORM_WORDS_MORE
        of the HTML's words, or the two share less than half of their words: a text/plain form
        that only says "use an HTML-capable client"). Then the HTML form is the text, and the
        lines of the text/plain form that the HTML form does not say (wording.unsaid_lines) are
        read after it, listed as PLAIN_FORM_NAME. Each choice but the first is noted. The HTML
        form's text is that of its HTML parts, one after the other (Apple Mail's is in pieces
        around its files: form_files)."""
        noted = len(self.notes)
        try:
            html_text = self._html_form_text(alternative, plain)
        except SourceError as error:
            if error.code not in CHARSET_ERRORS or not has_content(plain_text):
                raise  # the only text there is: as an HTML body, refused
            del self.notes[noted:]
            self.notes.append(f"{error.message} Its text/plain form is read.")
            return plain_text, "text/plain", None
        if html_text is None:
            return plain_text, "text/plain", None
        if not says_more(html_text, plain_text):
            del self.notes[noted:]  # the HTML form's repairs: it is not read
            return plain_text, "text/plain", None
        missing = lacking(html_text, plain_text)
        if not has_content(plain_text):
            self.notes.append("the text/plain form of the body is empty: its HTML form is read.")
            return html_text, "text/html", None
        # The lines of the text/plain form that the HTML form does not say are read after it: a
        # line of fewer than FORM_WORDS_MORE words that only the text/plain form has ("Returns are
        # guaranteed at 8% a year.") was lost, and the lines both say are read once.
        unsaid = unsaid_lines(plain_text, html_text).strip()
        beside = (plain, unsaid) if has_content(unsaid) else None
        after = ", and the lines of the text/plain form that it does not say after it" if beside else ""
        if says_more(plain_text, html_text):
            self.notes.append(
                "the text/plain and HTML forms of the body say different things (the text/plain form "
                f"lacks {missing} of the HTML form's words, the HTML form {lacking(plain_text, html_text)} "
                f"of the text/plain form's): the HTML form is read{after}."
            )
            return html_text, "text/html", beside
        self.notes.append(
            f"the text/plain form of the body says less than its HTML form (it lacks {missing} of the "
            f"HTML form's words): the HTML form is read{after}."
        )
        return html_text, "text/html", beside

    def _list_parts(self, multipart: EmailMessage, body: EmailMessage | None, scope: _Scope) -> None:
        """List the parts of `multipart` that are not its body nor one of the body's other forms,
        at any depth, in order. (The standard library's iter_attachments skips the first text part
        of the top level whether or not it is the body, so a body inside a nested multipart,
        multipart/signed around multipart/mixed or a list server's multipart/mixed around the
        sender's, was repeated as an attachment and the top level's first text part, the list's
        footer, lost.)"""
        for child in multipart.iter_parts():
            if child is body:
                continue
            if child.get_content_maintype() != "multipart":
                self.attachment(child, scope)
            elif child.get_content_subtype() in ("alternative", "related") and holds(child, body):
                # the body's other forms (its HTML twin) and the images it shows inline, but for
                # the files inside a form (_list_body_forms)
                alternative = body_alternative(child, body)
                if alternative is not None:
                    self._list_body_forms(alternative, body, scope)
            elif child.get_content_subtype() == "alternative":
                self._list_forms(child, scope)
            else:
                self._list_parts(child, body, scope)

    def _list_body_forms(self, alternative: EmailMessage, body: EmailMessage, scope: _Scope) -> None:
        """List the files inside the forms of the body's multipart/alternative: Apple Mail sends a
        mail with a file as text/plain and multipart/mixed of the HTML before the file, the file
        and the HTML after it, and a file there used to be neither listed nor read. The forms'
        text is not read again (form_files). An invitation that is a form (Google and Outlook
        send text/calendar beside text/plain and HTML) is listed and read for what the text does
        not say (calendar_text_beside): a description the text does not give used to be lost."""
        for form in alternative.iter_parts():
            if scope.beside is not None and holds(form, scope.beside[0]):
                part, text = scope.beside
                scope.listed += 1
                name = scope.prefix + (part.get_filename() or PLAIN_FORM_NAME)
                size = len(part.get_payload(decode=True) or b"")
                self._add(Attachment(name, part.get_content_type(), size, True, ""), text)
            if form is body:
                continue
            said = scope.body_text + (f"\n\n{scope.beside[1]}" if scope.beside else "")
            if is_calendar(form):
                self.attachment(form, scope, form_of=said)
            elif form.get_content_type() in OTHER_FORMS:  # a third form, even one marked as a file
                self._other_form(form, said, scope)
            elif not holds(form, body):  # the text of a multipart/related may be a third form
                for part in leaves(form):
                    if part.get_content_type() in OTHER_FORMS and is_fragment(part):
                        self._other_form(part, said, scope)
            for part in form_files(form, body):
                self.attachment(part, scope)

    def _other_form(self, form: EmailMessage, said: str, scope: _Scope) -> None:
        """A third form of the body (OTHER_FORMS: Gmail shows the AMP form, text/x-amp-html,
        instead of the HTML one), which was dropped unread. It is judged as the HTML form is
        against the text/plain form: read when it says more than the text read (`said`;
        wording.says_more), and then only its lines that the text does not say, listed as its own
        part; a form that repeats the text is not listed, as the HTML form it repeats is not."""
        content_type = form.get_content_type()
        kind = OTHER_FORMS[content_type]
        name = scope.prefix + (form.get_filename() or f"{kind} form of the body")
        data = self.payload(form, f"the {kind} form of the body")
        noted = len(self.notes)
        try:
            text = self.part_text(form, f"the {kind} form of the body", data)
        except SourceError as error:
            if error.code not in CHARSET_ERRORS:
                raise
            self.unreadable.append(error)
            self._add(_unreadable(name, content_type, len(data), error.message), "")
            return
        unsaid = unsaid_lines(text, said).strip() if says_more(text, said) else ""
        if not has_content(unsaid):
            del self.notes[noted:]  # its repairs: it is not read
            return
        self.notes.append(
            f"the {kind} form of the body ({content_type}) says more than its text: the lines of it that "
            "the text does not say are read after it."
        )
        self._add(Attachment(name, content_type, len(data), True, ""), unsaid)

    def _list_forms(self, alternative: EmailMessage, scope: _Scope) -> None:
        """List the forms of a multipart/alternative that is not the body's, and read one: its
        forms say the same thing (RFC 2046, 5.1.4), so reading each would score it twice. The one
        read is the form a body would be (text/plain, else text/html: find_body) when it has
        text, else the last form that has text (the richest, RFC 2046 says); the others are
        listed as not scored."""
        preferred = find_body(alternative)
        read = []  # (form, the indexes of its entries in self.attachments that have text)
        for form in alternative.iter_parts():
            start = len(self.attachments)
            if form.get_content_type() == "multipart/alternative":
                self._list_forms(form, scope)
            elif form.get_content_maintype() == "multipart":
                self._list_parts(form, None, scope)
            else:
                self.attachment(form, scope)
            scored = [i for i in range(start, len(self.attachments)) if self._has_text(i)]
            if scored:
                read.append((form, scored))
        if not read:
            return
        kept, kept_scored = next((f for f in read if holds(f[0], preferred)), read[-1])
        name = self.attachments[kept_scored[0]][0].name
        note = f"not scored: another form (multipart/alternative) of {name}, which is read"
        for form, scored in read:
            if form is not kept:
                for i in scored:
                    self.attachments[i] = (replace(self.attachments[i][0], scored=False, note=note), "")

    def _has_text(self, index: int) -> bool:
        attachment, text = self.attachments[index]
        return attachment.scored and has_content(text)


def parse_email(raw: bytes, *, limits: MailLimits | None = None) -> SourceMessage:
    """One message's bytes (RFC 5322) as a SourceMessage (module docstring); raises SourceError."""
    limits = limits or MailLimits()
    if len(raw) > limits.max_message_bytes:
        raise SourceError(
            "message_too_large",
            f"the message is {human_size(len(raw))}; the limit is {human_size(limits.max_message_bytes)}.",
        )
    if len(_CONTAINER_HEADER.findall(raw)) > limits.max_parts:
        raise SourceError("too_many_parts", f"the message has more than {limits.max_parts} MIME parts.")
    try:
        message = BytesParser(policy=POLICY).parsebytes(raw)
    except RecursionError:
        raise SourceError("nested_too_deep", "the MIME structure is nested too deep to read.") from None
    if not any(message.get(name) is not None for name in ("From", "Date", "Message-ID", "Subject", "To")):
        raise SourceError(
            "not_an_email",
            "no RFC 5322 header (From, Date, Message-ID, Subject or To) was found: this is not an email.",
        )
    reader = _Reader(limits)
    message_id = "".join(message_ids(header_text(message, "Message-ID"))[:1])
    try:
        reader.check_structure(message, (message_id,) if message_id else (), 0)
        text, text_from, _ = reader.body_and_attachments(message, (message_id,) if message_id else (), 0)
    except RecursionError:
        raise SourceError("nested_too_deep", "the MIME structure is nested too deep to read.") from None
    except (LookupError, AssertionError, KeyError, ValueError) as exc:
        raise SourceError("malformed_mime", f"the MIME structure cannot be read: {exc}") from None
    scored = [(a, t) for a, t in reader.attachments if a.scored and has_content(t)]
    if not has_content(text) and not scored:
        kinds = sorted({part.get_content_type() for part in message.walk() if not part.is_multipart()})
        sealed = sorted({part.get_content_type() for part in message.walk()} & SEALED_TYPES)
        if sealed:
            raise SourceError(
                "encrypted",
                f"the message is sealed ({', '.join(sealed)}: S/MIME or PGP encryption, or an opaque "
                "S/MIME signature): its text cannot be read without the recipient's key. Import the "
                "copy your mail gateway or journal keeps decrypted.",
            )
        if reader.unreadable:
            raise reader.unreadable[0]
        raise SourceError(
            "no_text_part",
            "the message has no text to read: no text part (text/plain, text/html or another) with text "
            f"in it and no text attachment (its parts: {', '.join(kinds) or 'none'}).",
        )
    body, attachments = _layout(text, _fit(text, reader.attachments, limits.max_body_chars))
    references = message_ids(header_text(message, "References"))
    in_reply_to = "".join(message_ids(header_text(message, "In-Reply-To"))[:1])
    if not message_id:
        message_id = ""
    external_id = message_id if message_id and len(message_id) <= 200 else ""
    if not external_id:
        external_id = "sha256:" + hashlib.sha256(raw).hexdigest()
    headers = {
        "from": header_text(message, "From"),
        "to": list(addresses(message, "To")),
        "cc": list(addresses(message, "Cc")),
        "date": header_text(message, "Date"),
        "message_id": message_id,
        "in_reply_to": in_reply_to,
        "references": list(references),
        "text_from": text_from,
    }
    if reader.notes:
        headers["notes"] = reader.notes
    participants = tuple(
        sorted({address_only(a) for a in (header_text(message, "From"), *headers["to"], *headers["cc"]) if a})
    )
    return SourceMessage(
        external_id=external_id,
        body=body,
        sender=sender_address(message),
        channel="email",
        received_at=sent_date(message),
        subject=header_text(message, "Subject"),
        headers=headers,
        attachments=attachments,
        message_id=message_id,
        thread_refs=tuple(dict.fromkeys((*references, *((in_reply_to,) if in_reply_to else ())))),
        participants=participants,
    )


def _document_in_archive(filename: str) -> str | None:
    """The document kind of a zip member by its name (scoring.sources.documents), None for any
    other file and for the files a Mac or Office leaves beside a document: a `__MACOSX/` or `._`
    resource fork, a `~$` lock file, which are not documents and would read as broken ones."""
    base = filename.rpartition("/")[2]
    if filename.startswith("__MACOSX/") or base.startswith(("._", "~$")):
        return None
    return KIND_BY_SUFFIX.get("." + base.lower().rpartition(".")[2])


def _unreadable(name: str, content_type: str, size: int, why: str) -> Attachment:
    """A part listed, not scored, because its text could not be read (Attachment.unreadable)."""
    return Attachment(name, content_type, size, False, f"not scored: {why}", unreadable=True)


def _fit(
    text: str, attachments: list[tuple[Attachment, str]], max_chars: int
) -> list[tuple[Attachment, str]]:
    """The attachments, the longest scored one listed as not read, then the next, until the body
    (_layout) is no longer than `max_chars`: a long prospectus does not cost the message (ingest
    refuses a body past the limit), and what was not read sends it to review. A text alone past
    the limit is left as it is, its attachments too: ingest refuses it (too_large), as any body.
    Sizes are added up, not laid out (each part: its header line and text, and the blank line
    before it), so a thousand parts cost one pass."""
    parts = list(attachments)
    if len(text) > max_chars:
        return parts
    sizes = {
        i: 3 + len(_attachment_header(attachment)) + len(content.strip())
        for i, (attachment, content) in enumerate(parts)
        if attachment.scored and has_content(content)
    }
    total = len(text) + sum(sizes.values())
    for i in sorted(sizes, key=lambda i: (-sizes[i], i)):
        if total <= max_chars:
            break
        attachment, content = parts[i]
        why = (
            f"its text, {len(content.strip()):,} characters, would make the message longer than "
            f"{max_chars:,} characters, the most a message holds (read, not kept)"
        )
        parts[i] = (_unreadable(attachment.name, attachment.content_type, attachment.size, why), "")
        total -= sizes[i]
    return parts


def _attachment_header(attachment: Attachment) -> str:
    """The line a scored attachment's text follows in the body."""
    return f"[Attachment: {attachment.name} · {attachment.content_type} · {human_size(attachment.size)}]"


def _layout(text: str, attachments: list[tuple[Attachment, str]]) -> tuple[str, list[dict]]:
    """The body (the text, then each scored attachment under its own header line) and the
    attachments as stored: {name, content_type, size, scored, note, start, end, and unreadable:
    true for text that could not be read (Attachment.unreadable)}."""
    body = text
    listed: list[dict] = []
    for attachment, content in attachments:
        entry = {
            "name": attachment.name,
            "content_type": attachment.content_type,
            "size": attachment.size,
            "scored": attachment.scored and has_content(content),
            "note": attachment.note if attachment.scored or attachment.note else "",
        }
        if entry["scored"]:
            header = _attachment_header(attachment)
            prefix = "\n\n" if body else ""
            start = len(body) + len(prefix)
            body = f"{body}{prefix}{header}\n{content.strip()}"
            entry.update(start=start, end=len(body))
        elif attachment.scored:
            entry["note"] = "not scored: no text"
        if attachment.unreadable:
            entry["unreadable"] = True
        listed.append(entry)
    return body, listed
