"""Message anatomy: whole emails and chat transcripts built around a core (a claim or a negative).

Real traffic is not one clean sentence. An email has a greeting, paragraphs of ordinary business
text, a sign-off and a signature whose legal boilerplate is full of the words a naive model keys
on, and often quoted history (a reply's "On ... wrote:" block, an Outlook header block, a
forward). A chat message is a transcript: names and timestamps in a platform's style, short
lines, a claim built over several of them. These builders put a rendered core (its rationale
spans included) into such a message and record where each part lies (`structure`: body,
signature, quoted), which the segmentation tests compare with what scoring.segmentation finds.

Pure Python. Every draw comes from the `rng` passed in; the content banks a message draws from
are those of its split (banks.py), so val and test messages carry disclaimers, paragraphs and
quoted mail the train split never saw.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scoring.corpus.framing import EMAIL_OPENERS
from scoring.corpus.render import Rendered, render
from scoring.corpus.vocab import Persona

SlotFn = Callable[[str], str]

BODY = "body"
SIGNATURE = "signature"
QUOTED = "quoted"

_WEEKDAYS_SHORT = ("Mon", "Tue", "Wed", "Thu", "Fri")
_WEEKDAYS_LONG = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_MONTHS_SHORT = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS_LONG = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
SIGN_OFFS: tuple[str, ...] = (
    "Best,", "Best regards,", "Kind regards,", "Regards,", "Many thanks,", "Thanks,", "Thank you,",
    "Cheers,", "Warm regards,", "All the best,", "Sincerely,", "Yours sincerely,", "Thanks again,",
    "Speak soon,", "Best wishes,", "Thanks", "Regards", "Best", "Cheers", "Kind regards",
)  # fmt: skip
CLOSING_LINES: tuple[str, ...] = (
    "", "", "", "Let me know if you have any questions.", "Happy to discuss on a call.",
    "Give me a ring if that's easier.", "Any questions, just reply to this email.",
    "Let me know what you think.", "Shout if anything is unclear.",
    "Speak to you {soon|next week|on {weekday}}.",
    "I'll follow up {tomorrow|later this week|on {weekday}}.", "Thanks for your patience.",
)  # fmt: skip
REPLY_OPENERS: tuple[str, ...] = (
    "", "", "Hi {client},", "{client},", "Thanks {client},", "Hi {client} - thanks for your note.",
    "Thanks for getting back to me.", "Hello {client},",
)  # fmt: skip
_ADDRESSES_US = (
    "200 West Madison Street, Suite 1400, Chicago, IL 60606",
    "One Boston Place, 26th Floor, Boston, MA 02108",
    "1700 Lincoln Street, Denver, CO 80203",
    "98 San Jacinto Blvd, Austin, TX 78701",
)
_ADDRESSES_UK = (
    "12 King Street, Leeds LS1 2HL",
    "4 St Paul's Churchyard, London EC4M 8AY",
    "Albany House, 31 Hurst Street, Birmingham B5 4BD",
    "9 Charlotte Square, Edinburgh EH2 4DR",
)


@dataclass
class Composed:
    """A whole message: text, rationale spans, and the parts it was built from."""

    text: str
    spans: list[tuple[int, int]] = field(default_factory=list)
    structure: list[tuple[int, int, str]] = field(default_factory=list)


class _Builder:
    """Concatenates pieces, keeping rationale spans and the [start, end, kind] of each part."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.length = 0
        self.spans: list[tuple[int, int]] = []
        self.structure: list[tuple[int, int, str]] = []

    def add(self, text: str, kind: str | None = None, spans: Sequence[tuple[int, int]] = ()) -> None:
        """Append text; `kind` None is a separator that belongs to no part. A separator waits
        for the next piece with content: none leads or trails a message, none doubles up."""
        if not text:
            return
        if kind is None and not text.strip():
            if self.length:
                self._pending = text
            return
        pending, self._pending = getattr(self, "_pending", ""), ""
        if pending or self.length == 0:
            lead = len(text) - len(text.lstrip())
            text, spans = text[lead:], [(s - lead, e - lead) for s, e in spans]
        if pending:
            self.pieces.append(pending)
            self.length += len(pending)
        start = self.length
        self.pieces.append(text)
        self.length += len(text)
        self.spans.extend((start + s, start + e) for s, e in spans)
        if kind is None:
            return
        # A part's extent excludes its leading and trailing whitespace.
        lead = len(text) - len(text.lstrip())
        trail = len(text) - len(text.rstrip())
        if lead == len(text):
            return
        s, e = start + lead, start + len(text) - trail
        if self.structure and self.structure[-1][2] == kind:
            self.structure[-1] = (self.structure[-1][0], e, kind)
        else:
            self.structure.append((s, e, kind))

    def build(self) -> Composed:
        text = "".join(self.pieces)
        stripped = text.strip()
        if stripped != text:
            raise ValueError("a composed message must not start or end with whitespace")
        return Composed(text, self.spans, [[s, e, k] for s, e, k in self.structure])


def fill(template: str, rng: random.Random, slot: SlotFn) -> str:
    return render(template, rng=rng, slot=slot).text


def pick(rng: random.Random, bank: Sequence[tuple[str, str]]) -> tuple[str, str]:
    return bank[rng.randrange(len(bank))]


# --- headers, names, dates -------------------------------------------------------------------------


def _email_of(first: str, last: str, domain: str, rng: random.Random) -> str:
    last = "".join(ch for ch in last.lower() if ch.isalpha())
    local = rng.choice((f"{first.lower()}.{last}", f"{first[0].lower()}{last}", f"{first.lower()}"))
    return f"{local}@{domain}"


def _time_12h(rng: random.Random) -> str:
    return f"{rng.randint(7, 12) if rng.random() < 0.5 else rng.randint(1, 6)}:{rng.randrange(60):02d} " + (
        rng.choice(("AM", "PM"))
    )


def attribution_line(rng: random.Random, name: str, address: str, region: str) -> list[str]:
    """The line(s) a mail client writes above quoted text."""
    day, month = rng.randint(1, 28), rng.randrange(12)
    year = rng.choice((2024, 2025, 2026))
    weekday = rng.randrange(5)
    hour, minute = rng.randint(7, 18), rng.randrange(60)
    style = rng.randrange(5)
    if style == 0:  # Gmail, UK
        line = (
            f"On {_WEEKDAYS_SHORT[weekday]}, {day} {_MONTHS_SHORT[month]} {year} at {hour:02d}:{minute:02d}, "
            f"{name} <{address}> wrote:"
        )
    elif style == 1:  # Gmail, US
        line = (
            f"On {_WEEKDAYS_SHORT[weekday]}, {_MONTHS_SHORT[month]} {day}, {year} at {_time_12h(rng)} "
            f"{name} <{address}> wrote:"
        )
    elif style == 2:  # Apple Mail
        line = f"On {day} {_MONTHS_LONG[month]} {year}, at {hour:02d}:{minute:02d}, {name} <{address}> wrote:"
    elif style == 3:  # short
        line = f"On {_MONTHS_LONG[month]} {day}, {year}, {name} wrote:"
    else:  # Thunderbird
        line = f"On {day:02d}/{month + 1:02d}/{year} {hour:02d}:{minute:02d}, {name} wrote:"
    if len(line) > 76 and rng.random() < 0.4:  # clients wrap a long attribution onto two lines
        cut = line.rfind(" ", 0, 72)
        return [line[:cut], line[cut + 1 :]]
    return [line]


def header_block(
    rng: random.Random,
    *,
    sender: tuple[str, str],
    recipient: tuple[str, str],
    subject: str,
    forward: bool,
) -> list[str]:
    """An Outlook-style header block (or a Gmail/Apple forward header) above earlier mail."""
    day, month, year = rng.randint(1, 28), rng.randrange(12), rng.choice((2024, 2025, 2026))
    weekday = _WEEKDAYS_LONG[rng.randrange(5)]
    sent = f"{weekday}, {_MONTHS_LONG[month]} {day}, {year} {_time_12h(rng)}"
    name, address = sender
    rname, raddress = recipient
    if forward:
        lead = rng.choice(("---------- Forwarded message ---------", "Begin forwarded message:", ""))
        lines = [lead] if lead else []
        if lead == "Begin forwarded message:":
            lines.append("")
        lines += [
            f"From: {name} <{address}>",
            f"Date: {weekday[:3]}, {day} {_MONTHS_SHORT[month]} {year} at "
            f"{rng.randint(7, 18):02d}:{rng.randrange(60):02d}",
            f"Subject: {subject}",
            f"To: {rname} <{raddress}>",
        ]
        return lines
    lead = rng.choice(("________________________________", "-----Original Message-----", "", ""))
    lines = [lead] if lead else []
    lines += [
        f"From: {name} <{address}>" if rng.random() < 0.7 else f"From: {name}",
        f"Sent: {sent}",
        f"To: {rname} <{raddress}>" if rng.random() < 0.6 else f"To: {rname}",
    ]
    if rng.random() < 0.3:
        lines.append(f"Cc: {rng.choice(('Operations', 'Client Services', 'Compliance'))}")
    lines.append(f"Subject: {subject}")
    return lines


SUBJECTS: tuple[str, ...] = (
    "{doc:cap}", "Quick question", "Re: our meeting", "Follow-up", "Your portfolio", "{product:cap}",
    "Documents", "Next steps", "Annual review", "Question about {product}", "Call on {weekday}",
    "Account update", "FYI", "Fees", "Transfer", "Please read", "Catch-up",
)  # fmt: skip


# --- signatures --------------------------------------------------------------------------------------


def signature_block(
    rng: random.Random,
    slot: SlotFn,
    persona: Persona,
    *,
    titles: Sequence[str],
    disclaimers: Sequence[tuple[str, str]],
    n_disclaimers: int,
    full: bool,
) -> tuple[str, list[str]]:
    """A sign-off and signature: name, and for a `full` block the title, firm, contact lines and
    `n_disclaimers` disclaimer paragraphs. Returns (text, disclaimer family ids used)."""
    lines: list[str] = []
    delimiter = rng.random() < 0.08
    if delimiter:
        lines.append("-- ")
    else:
        lines.append(rng.choice(SIGN_OFFS))
    name = f"{persona.first} {persona.last}" if full or rng.random() < 0.4 else persona.first
    lines.append(name)
    used: list[str] = []
    if full:
        lines.append(rng.choice(titles))
        lines.append(persona.firm)
        address = rng.choice(_ADDRESSES_US if persona.region == "us" else _ADDRESSES_UK)
        phone = (
            f"+1 {rng.choice(('312', '617', '303', '512'))} 555 01{rng.randrange(100):02d}"
            if persona.region == "us"
            else f"+44 20 7946 0{rng.randrange(1000):03d}"
        )
        contact = rng.randrange(4)
        if contact == 0:
            lines += [f"T: {phone}", f"E: {_email_of(persona.first, persona.last, persona.domain, rng)}"]
        elif contact == 1:
            lines += [f"{phone} | www.{persona.domain}"]
        elif contact == 2:
            lines += [address, f"Tel {phone}"]
        else:
            lines += [f"Direct: {phone}", f"www.{persona.domain}"]
    text = "\n".join(lines)
    paragraphs = []
    for _ in range(n_disclaimers):
        family_id, template = pick(rng, disclaimers)
        if family_id in used:
            continue
        used.append(family_id)
        paragraphs.append(fill(template, rng, slot))
    if paragraphs:
        text += "\n\n" + "\n\n".join(paragraphs)
    return text, used


# --- quoting ------------------------------------------------------------------------------------------


def quote_lines(text: str, depth: int = 1) -> str:
    prefix = ">" * depth
    return "\n".join(f"{prefix} {line}" if line.strip() else prefix for line in text.split("\n"))


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:1].isupper() and text[1:2].islower() else text


def greeting(rng: random.Random, slot: SlotFn, openers: Sequence[str] = EMAIL_OPENERS) -> str:
    return fill(rng.choice(openers), rng, slot)


# --- chat transcripts --------------------------------------------------------------------------------

CHAT_STYLES: tuple[str, ...] = ("slack", "teams", "whatsapp", "bloomberg", "sms", "plain")


def _chat_name(first: str, last: str, style: str, firm: str) -> str:
    if style == "slack":
        return f"{first.lower()}.{''.join(ch for ch in last.lower() if ch.isalpha())}"
    if style == "teams":
        return f"{last}, {first}"
    if style == "bloomberg":
        return f"{first[0]}{''.join(ch for ch in last.upper() if ch.isalpha())}"
    return f"{first} {last}" if style == "whatsapp" else first


def transcript_line(
    style: str, name: str, firm: str, minute: int, text: str, date: tuple[int, int, int]
) -> str:
    """One chat line (or a Teams name/time header plus the text) in the platform's style."""
    hour, mins = divmod(minute, 60)
    day, month, year = date
    if style == "slack":
        return f"[{hour:02d}:{mins:02d}] {name}: {text}"
    if style == "teams":
        return f"{name}  {hour:02d}:{mins:02d}\n{text}"
    if style == "whatsapp":
        return f"[{day:02d}/{month:02d}/{year}, {hour:02d}:{mins:02d}:{(minute * 7) % 60:02d}] {name}: {text}"
    if style == "bloomberg":
        return f"{hour:02d}:{mins:02d}:{(minute * 13) % 60:02d} {name} ({firm}): {text}"
    if style == "sms":
        return f"{name}: {text}"
    return f"{name} ({hour:02d}:{mins:02d}): {text}"


@dataclass(frozen=True)
class ChatLine:
    """One typed line: who ('self' = the sender being checked, 'other'), text and spans in it."""

    who: str
    text: str
    spans: tuple[tuple[int, int], ...] = ()


def split_chat_family(rendered: Rendered) -> list[ChatLine]:
    """A rendered multi-line family ("\\n"-separated, "@other: " lines typed by the other
    party) as typed lines with their spans."""
    lines: list[ChatLine] = []
    position = 0
    for raw in rendered.text.split("\n"):
        start, end = position, position + len(raw)
        position = end + 1
        who, text, offset = "self", raw, start
        if raw.startswith("@other: "):
            who, text, offset = "other", raw[len("@other: ") :], start + len("@other: ")
        spans = []
        for s, e in rendered.spans:
            if s >= start and e <= end:
                if who == "other":
                    raise ValueError(f"a rationale span lies on a line of the other party: {raw!r}")
                spans.append((s - offset, e - offset))
            elif s < end and e > start:
                raise ValueError(f"a rationale span crosses a line break in {rendered.text!r}")
        if text.strip():
            lines.append(ChatLine(who, text, tuple(spans)))
    return lines


def compose_transcript(
    lines: Sequence[ChatLine],
    *,
    rng: random.Random,
    persona: Persona,
    other: tuple[str, str],
    style: str,
) -> Composed:
    """A chat transcript of `lines` in `style`; the sender's lines carry their spans."""
    builder = _Builder()
    me = _chat_name(persona.first, persona.last, style, persona.firm)
    them = _chat_name(other[0], other[1], style, "")
    if style == "sms":
        me = rng.choice(("Me", persona.first))
    minute = rng.randint(8 * 60, 17 * 60)
    date = (rng.randint(1, 28), rng.randint(1, 12), rng.choice((2024, 2025, 2026)))
    for i, line in enumerate(lines):
        if i:
            builder.add("\n")
            minute += rng.choice((0, 0, 1, 1, 2, 3, 5))
        name = me if line.who == "self" else them
        firm = persona.firm if line.who == "self" else rng.choice(("Client", "Desk", persona.firm))
        prefix = transcript_line(style, name, firm, minute, "", date)
        builder.add(prefix + line.text, BODY, [(len(prefix) + s, len(prefix) + e) for s, e in line.spans])
    return builder.build()


_SENTENCE_END = re.compile(r"[.!?]$")
