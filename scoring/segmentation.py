"""Which part of a message its sender wrote: the body, the signature block, quoted history.

Pure Python, no Django. `segment(text)` covers a message with consecutive segments:

- `body`: what the sender wrote in this message (the greeting, the text, a P.S.);
- `signature`: the sign-off and the block under it (name, title, contact lines, and the legal
  boilerplate regulated firms attach: "member FINRA/SIPC", "past performance is no guarantee of
  future results", "not FDIC insured", "authorised and regulated by the FCA");
- `quoted`: earlier messages the sender quotes or forwards: "> " lines, the "On ... wrote:" line
  above them, and everything below an Outlook-style header block ("From: ... Sent: ... To: ...
  Subject: ...") or a forward separator ("---------- Forwarded message ---------", or any
  labelled dash line such as "---- Message ----" with a From: line under it); each also as mail
  clients localise it (German, French, Spanish, Italian, Dutch, Portuguese: "De : ... Envoyé :
  ... À : ... Objet :", "-----Message d'origine-----", "Am ... um 09:12 schrieb Hans <h@x>:").

What is scored and what routes (the Scorer, the rules and the review screen share this):
every segment is scored in its own right, so boilerplate and quoted words cannot mix with the
sender's own sentences in one window; the body and the signature route (a claim in a signature
tagline is still the sender's claim); quoted history does not, because it is an earlier message
(scored when it was sent) or somebody else's words (a client's "is it guaranteed?", a scam
forwarded as a warning). A message whose only text is quoted (a bare forward) is what its sender
sends, so then the quoted part routes.

The detection is deliberately conservative: a line is a sign-off only when it is nothing but a
closing formula ("Best regards,", "Thanks", "Cheers!") followed by a short line (a name) or by
nothing; quoting needs a quote prefix or one of the header patterns below. Anything not
recognised stays body, which routes: a mistake here can only make a message more likely to be
reviewed, never less. (A claim written under the sign-off is in the signature, which routes.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BODY = "body"
SIGNATURE = "signature"
QUOTED = "quoted"
KINDS: tuple[str, ...] = (BODY, SIGNATURE, QUOTED)
# Parts that only a message's source knows of (scoring.services.context), never found by
# `segment`: the text of an email's attachment (the sender sends it: it routes), and quoted
# history already read in an earlier message of the thread (not scored again, never routes).
ATTACHMENT = "attachment"
SEEN = "seen"
ROUTING_KINDS: frozenset[str] = frozenset({BODY, SIGNATURE, ATTACHMENT})
# Bump when the rules below change what they find: predictions store the version they used.
SEGMENTATION_VERSION = 4

_QUOTE_PREFIX = re.compile(r"^[ \t]*>")
# "On Tue, 4 Mar 2025 at 09:12, Jane Roe <jane@x.example> wrote:" (one or two lines), and the
# same in a few other languages mail clients localise it to.
# German and Dutch put the name after the verb: "Am Di., 4. März 2025 um 09:12 Uhr schrieb Hans
# Muster <hans@x.example>:", "Op di 4 mrt 2025 om 09:12 schreef Piet <p@x.example>:"; the time of
# day right before the verb and the address after the name tell it from a sentence ("Am Freitag um
# 15:00 rief ich Sie an und schrieb Ihnen danach:").
_ATTRIBUTION = re.compile(
    r"^[ \t]*(?:(?:On|Am|Le|El|Il|Op|Em)\b.{4,300}?\b"
    r"(?:wrote|schrieb|a écrit|escribió|ha scritto|schreef|escreveu|het volgende geschreven)\s*:?"
    r"|(?:Am|Op)\b.{0,300}?\b\d{1,2}:\d{2}(?:\s*Uhr)?,?\s+(?:schrieb|schreef)\s+[^<>\n]{1,200}<[^<>@\s]+@[^<>\s]+>\s*:)"
    r"[ \t]*$",
    re.IGNORECASE,
)
# Thunderbird's German and Dutch attribution names no address ("Am 04.03.2025 um 09:12 schrieb
# Hans Muster:"): an attribution only over "> " lines, and not when a pronoun follows the verb.
_ATTRIBUTION_OVER_QUOTES = re.compile(
    r"^[ \t]*(?:Am|Op)\b.{0,300}?\b\d{1,2}:\d{2}(?:\s*Uhr)?,?\s+(?:schrieb|schreef)\s+"
    r"(?!(?:ich|wir|mir|uns|Ihnen|ihm|ihr|ik|we|wij|u|jullie|mij|ons)\b)[^:\n]{1,120}:[ \t]*$",
    re.IGNORECASE,
)
_SEPARATOR = re.compile(
    r"^[ \t]*(?:-{2,}\s*(?:Original Message|Forwarded message|Forwarded Message|Mensaje original|"
    r"Ursprüngliche Nachricht|Original-Nachricht|Weitergeleitete Nachricht|Message d'origine|"
    r"Message transféré|Mensaje reenviado|Messaggio originale|Messaggio inoltrato|"
    r"Oorspronkelijk bericht|Doorgestuurd bericht|Mensagem original|Mensagem encaminhada)\s*-{2,}|"
    r"Begin forwarded message:|-----Original Message-----)[ \t]*$",
    re.IGNORECASE,
)
_RULE_LINE = re.compile(r"^[ \t]*(?:_{8,}|-{8,}|={8,})[ \t]*$")
# Any other labelled dash line naming a message ("---- Message ----", "----- Forwarded by Ann
# -----", "-- Mensagem --"): a forward only when a From: line comes next, since a dash line can be
# a heading in a letter ("--- Transfer ---" over "From: your savings account" is the sender's).
_LABELLED_RULE = re.compile(
    r"^[ \t]*-{2,}[ \t]*(?=[^-\n]*\b(?:message|forward|forwarded|original|e-?mail|mail|nachricht|"
    r"mensaje|messaggio|bericht|mensagem|courriel|linkedin|whatsapp|sms|chat)\b)[^\s-][^-\n]{0,38}?"
    r"[ \t]*-{2,}[ \t]*$",
    re.IGNORECASE,
)
# An Outlook-style header line, in the languages mail clients localise it to (English, German,
# French, Spanish, Italian, Dutch, Portuguese); French puts a space (often a no-break space)
# before the colon: "De : Jean Dupont", "Objet : Placement".
_FROM_NAMES = r"From|Von|De|Da|Van"
_HEADER_NAMES = (
    rf"{_FROM_NAMES}|Sent|Date|To|Cc|Subject|Gesendet|Datum|An|Betreff|Envoyé|À|A|Objet|"
    r"Enviado(?: em)?|Enviada(?: em)?|Fecha|Para|Asunto|Assunto|Inviato|Data|Oggetto|Verzonden|Aan|Onderwerp"
)
_HEADER = re.compile(rf"^[ \t]*\*?({_HEADER_NAMES})\*?[ \t\u00a0]*:", re.IGNORECASE)
# Sent and Subject: fields a mail header block has and a slip or an itinerary does not.
_MAIL_ONLY_FIELDS = frozenset(
    {"sent", "gesendet", "envoyé", "enviado", "enviado em", "enviada", "enviada em", "inviato", "verzonden"}
    | {"subject", "betreff", "objet", "asunto", "assunto", "oggetto", "onderwerp"}
)
_FROM = re.compile(rf"^[ \t]*\*?({_FROM_NAMES})\*?[ \t\u00a0]*:[ \t\u00a0]*\S", re.IGNORECASE)
_SIG_DELIMITER = re.compile(r"^-- ?$")
_CLOSINGS = (
    r"(?:best|kind|warm|warmest|many|with\s+(?:best|kind|warm)|all\s+the)?\s*"
    r"(?:regards|wishes|thanks|thank\s+you|cheers|best|sincerely|rgds|kr|br|ta|thx|"
    r"yours(?:\s+(?:sincerely|faithfully|truly))?|respectfully|speak\s+soon|talk\s+soon|"
    r"take\s+care|all\s+the\s+best|thanks\s+again|thanks\s+so\s+much|thanks\s+and\s+regards|"
    r"best\s+regards|kind\s+regards|warm\s+regards)"
)
_SIGN_OFF = re.compile(rf"^[ \t]*{_CLOSINGS}[ \t]*[,.!]*[ \t]*(?:\U0001F642|\U0001F44D|:\))?[ \t]*$", re.I)
_POSTSCRIPT = re.compile(r"^[ \t]*P\.?\s?S\.?\b", re.IGNORECASE)
# A name line under a sign-off: at most this many words.
_NAME_WORDS = 6


@dataclass(frozen=True)
class Segment:
    """One part of a message: its kind and character span [start, end) into the text."""

    kind: str
    start: int
    end: int

    @property
    def routes(self) -> bool:
        return self.kind in ROUTING_KINDS


@dataclass(frozen=True)
class _Line:
    start: int
    end: int  # without the line break
    text: str

    @property
    def blank(self) -> bool:
        return not self.text.strip()


def _lines(text: str) -> list[_Line]:
    lines, position = [], 0
    for raw in text.splitlines(keepends=True):
        content = raw.rstrip("\r\n")
        lines.append(_Line(position, position + len(content), content))
        position += len(raw)
    return lines


def _header_block_at(lines: Sequence[_Line], i: int) -> bool:
    """An Outlook/forward header block starts at line i: From: followed by 2+ header lines, one
    of them a field only mail headers have (Sent or Subject, in any of the languages) or the From:
    line with an address. From, To and Date alone are a transfer slip, an itinerary or a receipt
    pasted into a letter ("De: Madrid / A: Lisboa / Fecha: 12 de junio"), which stays the sender's."""
    if not _FROM.match(lines[i].text):
        return False
    fields = {_HEADER.match(lines[i].text).group(1).lower()}
    for line in lines[i + 1 : i + 7]:
        match = _HEADER.match(line.text)
        if match:
            fields.add(match.group(1).lower())
        elif not line.blank:
            break
    return len(fields) >= 3 and (bool(fields & _MAIL_ONLY_FIELDS) or "@" in lines[i].text)


def _from_line_follows(lines: Sequence[_Line], i: int) -> bool:
    """The first non-blank line after line i is a From: line."""
    following = next((line for line in lines[i + 1 : i + 3] if not line.blank), None)
    return following is not None and bool(_FROM.match(following.text))


def _attribution_at(lines: Sequence[_Line], i: int, pattern: re.Pattern = _ATTRIBUTION) -> int:
    """Number of lines (1 or 2) of an "On ... wrote:" attribution starting at line i, else 0."""
    if pattern.match(lines[i].text):
        return 1
    if i + 1 < len(lines) and len(lines[i].text) < 300:
        joined = f"{lines[i].text} {lines[i + 1].text}"
        if lines[i].text.lstrip()[:3].lower() in ("on ", "am ", "le ", "el ", "il ", "op ", "em ") and (
            pattern.match(joined)
        ):
            return 2
    return 0


def _line_kinds(lines: Sequence[_Line]) -> list[str]:
    """Quoted history first (it decides where the sender's own text ends), then signatures."""
    kinds = [BODY] * len(lines)
    i = 0
    while i < len(lines):
        text = lines[i].text
        span = _attribution_at(lines, i)
        over_quotes = span or _attribution_at(lines, i, _ATTRIBUTION_OVER_QUOTES)
        if over_quotes and any(
            _QUOTE_PREFIX.match(line.text) for line in lines[i + over_quotes : i + over_quotes + 3]
        ):
            span = over_quotes
            for j in range(i, i + span):
                kinds[j] = QUOTED  # the attribution above "> " lines; the "> " lines follow
            i += span
            continue
        if (
            span
            or _SEPARATOR.match(text)
            or _header_block_at(lines, i)
            or (_RULE_LINE.match(text) and i + 1 < len(lines) and _header_block_at(lines, i + 1))
            or (_LABELLED_RULE.match(text) and _from_line_follows(lines, i))
        ):
            for j in range(i, len(lines)):  # top-posting: all that follows is the history
                kinds[j] = QUOTED
            break
        if _QUOTE_PREFIX.match(text):
            kinds[i] = QUOTED
        i += 1
    _mark_signatures(lines, kinds)
    return kinds


def _mark_signatures(lines: Sequence[_Line], kinds: list[str]) -> None:
    """In each run of body lines, a signature starts at a "-- " delimiter or at a sign-off line
    followed by a short (name) line or by nothing; a P.S. paragraph after it is body again."""
    i = 0
    while i < len(lines):
        if kinds[i] != BODY:
            i += 1
            continue
        run_end = i
        while run_end < len(lines) and kinds[run_end] == BODY:
            run_end += 1
        start = _signature_start(lines, i, run_end)
        if start is not None:
            in_postscript = False
            for j in range(start, run_end):
                if _POSTSCRIPT.match(lines[j].text):
                    in_postscript = True
                elif in_postscript and lines[j].blank:
                    in_postscript = False
                kinds[j] = BODY if in_postscript else SIGNATURE
        i = run_end


def _signature_start(lines: Sequence[_Line], first: int, end: int) -> int | None:
    for j in range(first, end):
        if _SIG_DELIMITER.match(lines[j].text):
            return j
    for j in range(first, end):
        if not _SIGN_OFF.match(lines[j].text):
            continue
        following = next((line for line in lines[j + 1 : end] if not line.blank), None)
        if following is None or (
            len(following.text.split()) <= _NAME_WORDS
            and not following.text.rstrip().endswith((".", "?", "!"))
        ):
            return j
    return None


def segment(text: str) -> list[Segment]:
    """The message's segments, in order, covering every non-blank line (see the module
    docstring); blank lines and line breaks between two segments belong to neither. An empty or
    blank text has no segments."""
    lines = _lines(text)
    kinds = _line_kinds(lines)
    segments: list[Segment] = []
    for line, kind in zip(lines, kinds, strict=True):
        if line.blank:
            continue
        if segments and segments[-1].kind == kind:
            segments[-1] = Segment(kind, segments[-1].start, line.end)
        else:
            segments.append(Segment(kind, line.start, line.end))
    return [_strip(text, s) for s in segments]


def _strip(text: str, seg: Segment) -> Segment:
    start, end = seg.start, seg.end
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Segment(seg.kind, start, end)


def routing_segments(segments: Sequence[Segment]) -> list[Segment]:
    """The segments whose scores and rule hits route the message: body and signature, or, when
    the message has neither, its quoted text (a bare forward is what its sender sends)."""
    own = [s for s in segments if s.routes]
    return own or list(segments)


def kind_at(segments: Iterable[Segment], start: int, end: int) -> str | None:
    """The kind of the segment that overlaps [start, end) most, or None outside every segment."""
    best, overlap = None, 0
    for seg in segments:
        shared = min(end, seg.end) - max(start, seg.start)
        if shared > overlap:
            best, overlap = seg.kind, shared
    return best


def segments_json(segments: Sequence[Segment]) -> list[dict]:
    """[{kind, start, end, routes}] of a message's segments, as predictions store them."""
    routing = set(routing_segments(segments))
    return [{"kind": s.kind, "start": s.start, "end": s.end, "routes": s in routing} for s in segments]


# --- sentences ------------------------------------------------------------------------------------

# A sentence ends at . ! ? (one or more, closing quotes and brackets included) followed by white
# space, and at every line break (a chat line, a list item, a heading is a unit of its own).
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s)|\n")
# Words whose full stop ends no sentence.
_ABBREVIATIONS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "no",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "approx",
        "inc",
        "ltd",
        "co",
        "u.s",
        "u.k",
    }
)


def sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The [start, end) spans of the sentences of text[start:end], stripped of white space."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    position = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if match.group(0) != "\n":
            word = text[max(start, text.rfind(" ", start, match.start()) + 1) : match.start()].lower()
            if word.rstrip(".") in _ABBREVIATIONS:
                continue
        spans.append((position, match.end()))
        position = match.end()
    spans.append((position, end))
    stripped = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            stripped.append((a, b))
    return stripped


def sentence_units(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """What sentence-level scoring reads of text[start:end]: every sentence, and every pair of
    adjacent sentences (a claim split over two sentences, "Our fund is different. The payouts are
    certain.", or over two chat lines), in order."""
    spans = sentences(text, start, end)
    units = []
    for i, span in enumerate(spans):
        units.append(span)
        if i + 1 < len(spans):
            units.append((span[0], spans[i + 1][1]))
    return units
