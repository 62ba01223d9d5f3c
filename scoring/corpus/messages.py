"""From a family (or none) to a whole message of a given shape, drawing parts from one split.

Shapes:
- `short`: one core sentence with a greeting and sign-off (framing.frame_short), email/chat/SMS;
- `padded`: the core among paragraphs of office trivia (framing.frame_padded);
- `email`: greeting, the core among 0-2 business paragraphs, a closing line, a signature block
  (often with the disclaimers regulated firms attach; sometimes the disclaimers sit in the body
  with no sign-off above them);
- `reply`: a reply above quoted history (a client's question or note, a colleague's message, the
  adviser's earlier mail), quoted with "> " under an "On ... wrote:" line or under an Outlook
  header block;
- `forward`: the core as the comment above a forwarded message (a scam or promotion forwarded
  as a warning, an earlier client or adviser message);
- `long`: a 300-700 word letter of business paragraphs (portfolio review, onboarding, planning,
  operations) with the core somewhere in it;
- `chat`: a chat-line family (several typed lines) in a transcript, with other lines around it;
- `chat_line`: the core sentence, chat-styled, as one line of a transcript;
- `review`: a structured letter (annual review, year-end letter, committee memo): headings, lists
  of accounts and holdings with figures, short paragraphs, with the core in one section;
- `chatter`, `business_email`: no core at all (ordinary traffic).

Everything the message carries besides its core comes from the split's banks (banks.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from scoring.corpus import anatomy, mailparts, structured
from scoring.corpus.anatomy import BODY, QUOTED, SIGNATURE, ChatLine, Composed, _Builder, fill, pick
from scoring.corpus.banks import SplitBanks
from scoring.corpus.framing import PADDING_POSITIONS, frame_padded, frame_short, lead_in
from scoring.corpus.render import InformalStyle, Rendered, render
from scoring.corpus.schema import CorpusError
from scoring.corpus.vocab import BASE, FIRST_NAMES, LAST_NAMES, Persona, Slots, Vocabulary, draw_persona

SHAPES: tuple[str, ...] = (
    "short",
    "padded",
    "email",
    "reply",
    "forward",
    "long",
    "chat",
    "chat_line",
    "review",
    "chatter",
    "business_email",
)
CORELESS_SHAPES = frozenset({"chatter", "business_email"})
# Channel mix of short messages per style (email, chat, sms).
SHORT_CHANNELS: dict[str, tuple[int, int, int]] = {"plain": (45, 35, 20), "informal": (0, 65, 35)}
PADDING_PRE_TOKENS: tuple[int, int] = (200, 500)
EMAIL_THEMES: tuple[str, ...] = (
    "kyc_onboarding", "fees_admin", "meeting_notes", "planning", "portfolio_review",
    "market_commentary", "operations", "relationship",
)  # fmt: skip
# Themes of a long letter, by kind of letter.
LETTERS: tuple[tuple[str, ...], ...] = (
    ("relationship", "portfolio_review", "portfolio_review", "market_commentary", "fees_admin", "planning"),
    ("relationship", "kyc_onboarding", "fees_admin", "meeting_notes", "planning"),
    ("meeting_notes", "meeting_notes", "planning", "portfolio_review", "operations"),
    ("market_commentary", "market_commentary", "portfolio_review", "planning", "relationship"),
    ("operations", "operations", "fees_admin", "meeting_notes", "relationship"),
)
LONG_WORDS: tuple[int, int] = (300, 700)


@dataclass(frozen=True)
class Options:
    """What a recipe asks of its messages beyond the shape."""

    quoted_themes: tuple[str, ...] = ("client_question", "client_update", "colleague", "adviser_earlier")
    disclaimer_rate: float = 0.7  # of emails whose signature carries disclaimers
    inline_disclaimer_rate: float = 0.12  # disclaimers in the body with no sign-off above them


@dataclass(frozen=True)
class Message:
    """A rendered message before it is given an id and a split."""

    body: str
    spans: list[tuple[int, int]]
    channel: str
    sender: str
    structure: list[list] = field(default_factory=list)
    parts: tuple[str, ...] = ()
    has_disclaimer: bool = False


class _Parts:
    """Draws content parts of one split and remembers their family ids."""

    def __init__(self, banks: SplitBanks, split: str, rng: random.Random, slot) -> None:
        self.banks, self.split, self.rng, self.slot = banks, split, rng, slot
        self.used: list[str] = []

    def family(self, pool: str) -> tuple[str, str]:
        family_id, template = pick(self.rng, self.banks.of(pool, self.split))
        self.used.append(family_id)
        return family_id, template

    def text(self, pool: str) -> str:
        return fill(self.family(pool)[1], self.rng, self.slot)

    def paragraphs(self, themes) -> list[str]:
        return [self.text(f"business:{theme}") for theme in themes]

    def disclaimers(self, region: str, n: int) -> list[str]:
        chosen: list[str] = []
        for _ in range(n):
            pool = f"disclaimer:{region}" if self.rng.random() < 0.7 else "disclaimer:any"
            family_id, template = pick(self.rng, self.banks.of(pool, self.split))
            if family_id in self.used:
                continue
            self.used.append(family_id)
            chosen.append(fill(template, self.rng, self.slot))
        return chosen


def _other_person(rng: random.Random, persona: Persona) -> tuple[str, str]:
    first = rng.choice([n for n in FIRST_NAMES if n != persona.first])
    return first, rng.choice(LAST_NAMES)


def core_of(template: str, *, style: str, rng: random.Random, slots: Slots) -> Rendered:
    """A family template rendered as a message's core: informal styled, or with a lead-in at
    framing.LEAD_IN_RATE."""
    if style == "informal":
        return render(template, rng=rng, slot=slots, transform=InformalStyle(rng))
    return lead_in(render(template, rng=rng, slot=slots), rng=rng, slot=slots)


def _signature(b: _Builder, parts: _Parts, persona: Persona, *, full: bool, n_disclaimers: int) -> bool:
    """Append a sign-off and signature block; True when it carries a disclaimer."""
    text, _ = anatomy.signature_block(
        parts.rng,
        parts.slot,
        persona,
        titles=mailparts.JOB_TITLES,
        disclaimers=(),
        n_disclaimers=0,
        full=full,
    )
    disclaimers = parts.disclaimers(persona.region, n_disclaimers)
    if disclaimers:
        text += "\n\n" + "\n\n".join(disclaimers)
    b.add(text, SIGNATURE)
    return bool(disclaimers)


def _email_body(b: _Builder, core: Rendered | None, parts: _Parts, *, before: int, after: int) -> None:
    rng = parts.rng
    opener = anatomy.greeting(rng, parts.slot)
    if opener:
        b.add(opener, BODY)
        b.add("\n\n")
    themes = [rng.choice(EMAIL_THEMES) for _ in range(before + after)]
    paragraphs = parts.paragraphs(themes)
    for paragraph in paragraphs[:before]:
        b.add(paragraph, BODY)
        b.add("\n\n")
    if core is not None:
        b.add(core.text, BODY, core.spans)
        closing = fill(rng.choice(anatomy.CLOSING_LINES), rng, parts.slot)
        if closing:
            b.add(" " + closing, BODY)
    for i, paragraph in enumerate(paragraphs[before:]):
        if i or core is not None:
            b.add("\n\n")
        b.add(paragraph, BODY)


def compose_email(
    core: Rendered | None, parts: _Parts, persona: Persona, options: Options
) -> tuple[Composed, bool]:
    rng = parts.rng
    b = _Builder()
    before, after = rng.choice(((0, 0), (0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (0, 2)))
    if core is None and before + after == 0:
        before = 1
    _email_body(b, core, parts, before=before, after=after)
    has_disclaimer = False
    n = rng.choice((1, 1, 2, 2, 3)) if rng.random() < options.disclaimer_rate else 0
    if n and rng.random() < options.inline_disclaimer_rate:
        # The firm's boilerplate straight under the text, no sign-off: the model must know it.
        b.add("\n\n")
        text = "\n\n".join(parts.disclaimers(persona.region, n))
        b.add(text, BODY)
        return b.build(), bool(text)
    if rng.random() < 0.92:
        b.add("\n\n")
        has_disclaimer = _signature(b, parts, persona, full=rng.random() < 0.8 or n > 0, n_disclaimers=n)
    return b.build(), has_disclaimer


def _quoted_message(parts: _Parts, persona: Persona, theme: str) -> tuple[str, tuple[str, str], bool]:
    """An earlier message: (text, (name, address) of its author, written by the adviser)."""
    rng = parts.rng
    content = parts.text(f"quoted:{theme}")
    if theme == "adviser_earlier":
        author = (
            f"{persona.first} {persona.last}",
            anatomy._email_of(persona.first, persona.last, persona.domain, rng),
        )
        lines = [f"Hi {parts.slot('client')},", "", content, "", rng.choice(anatomy.SIGN_OFFS), persona.first]
        return "\n".join(lines), author, True
    first, last = _other_person(rng, persona)
    domain = rng.choice(
        ("gmail.example", "outlook.example", "icloud.example", f"{last.lower()}family.example")
    )
    if theme in ("colleague",):
        domain = persona.domain
    if theme == "scam_forward":
        domain = rng.choice(("fastwealth-club.example", "cryptoyield.example", "prime-returns.example"))
        first, last = rng.choice((("Investor", "Relations"), ("VIP", "Desk"), ("Wealth", "Team")))
    author = (f"{first} {last}", anatomy._email_of(first, last, domain, rng))
    opener = rng.choice((f"Hi {persona.first},", f"Dear {persona.first},", f"{persona.first},", "Hi,", ""))
    if theme == "scam_forward":
        opener = rng.choice(("Dear Investor,", "Hello friend,", "", "Dear Sir/Madam,"))
    lines = ([opener, ""] if opener else []) + [content]
    if theme != "scam_forward":
        lines += ["", rng.choice(("Thanks", "Thanks,", "Best,", "Regards", "Cheers")), first]
    return "\n".join(lines), author, False


def compose_reply(
    core: Rendered, parts: _Parts, persona: Persona, options: Options, *, forward: bool = False
) -> tuple[Composed, bool]:
    rng = parts.rng
    b = _Builder()
    opener = fill(rng.choice(anatomy.REPLY_OPENERS), rng, parts.slot)
    if opener:
        b.add(opener, BODY)
        b.add("\n\n")
    b.add(core.text, BODY, core.spans)
    closing = fill(rng.choice(anatomy.CLOSING_LINES), rng, parts.slot)
    if closing:
        b.add(" " + closing, BODY)
    has_disclaimer = False
    if rng.random() < 0.85:
        b.add("\n\n")
        n = rng.choice((0, 1, 1, 2)) if rng.random() < options.disclaimer_rate else 0
        has_disclaimer = _signature(b, parts, persona, full=rng.random() < 0.5 or n > 0, n_disclaimers=n)
    theme = rng.choice(options.quoted_themes)
    earlier, author, _ = _quoted_message(parts, persona, theme)
    me = (
        f"{persona.first} {persona.last}",
        anatomy._email_of(persona.first, persona.last, persona.domain, rng),
    )
    subject = fill(rng.choice(anatomy.SUBJECTS), rng, parts.slot)
    b.add("\n\n")
    if forward or rng.random() < 0.35:
        header = anatomy.header_block(
            rng,
            sender=author,
            recipient=me,
            subject=("Fwd: " if forward else "RE: ") + subject,
            forward=forward,
        )
        b.add("\n".join(header) + "\n\n" + earlier, QUOTED)
    else:
        attribution = anatomy.attribution_line(rng, author[0], author[1], persona.region)
        b.add("\n".join(attribution) + "\n" + anatomy.quote_lines(earlier), QUOTED)
    return b.build(), has_disclaimer


def compose_long(
    core: Rendered | None, parts: _Parts, persona: Persona, options: Options
) -> tuple[Composed, bool]:
    rng = parts.rng
    target = rng.randint(*LONG_WORDS)
    letter = list(rng.choice(LETTERS))
    paragraphs: list[str] = []
    words = 0
    while words < target and len(paragraphs) < 14:
        theme = letter[len(paragraphs) % len(letter)]
        paragraph = parts.text(f"business:{theme}")
        paragraphs.append(paragraph)
        words += len(paragraph.split())
    b = _Builder()
    opener = anatomy.greeting(rng, parts.slot, anatomy.EMAIL_OPENERS[:-1])
    b.add(opener, BODY)
    at = rng.randint(1, len(paragraphs) - 1) if len(paragraphs) > 1 else 1
    for i, paragraph in enumerate(paragraphs):
        if core is not None and i == at:
            b.add("\n\n")
            b.add(core.text, BODY, core.spans)
        b.add("\n\n")
        b.add(paragraph, BODY)
    if core is not None and at >= len(paragraphs):
        b.add("\n\n")
        b.add(core.text, BODY, core.spans)
    b.add("\n\n")
    n = rng.choice((0, 1, 2, 3)) if rng.random() < options.disclaimer_rate else 0
    has_disclaimer = _signature(b, parts, persona, full=True, n_disclaimers=n)
    return b.build(), has_disclaimer


# Where a transcript's other lines come from: (pool, weight, who types it).
CHATTER_POOLS: tuple[tuple[str, int, str | None], ...] = (
    ("client-line", 30, "other"),
    ("chatter", 35, None),
    ("market-colour", 25, None),
    ("ops-line", 10, None),
)


def _chatter(parts: _Parts, n: int) -> list[ChatLine]:
    lines = []
    pools, weights = zip(*[(p, w) for p, w, _ in CHATTER_POOLS], strict=True)
    who_of = {p: who for p, _, who in CHATTER_POOLS}
    for _ in range(n):
        pool = parts.rng.choices(pools, weights=weights)[0]
        who = who_of[pool] or parts.rng.choice(("self", "other"))
        lines.append(ChatLine(who, parts.text(pool)))
    return lines


REVIEW_SECTIONS: tuple[str, ...] = (
    "figures",
    "performance",
    "changes",
    "outlook",
    "planning",
    "admin",
    "market",
)


def compose_review(
    core: Rendered | None, parts: _Parts, persona: Persona, options: Options
) -> tuple[Composed, bool]:
    """A structured letter: greeting, a personal opener, 3-6 headed sections (lists of figures,
    short paragraphs, a market note), a personal closer and a full signature."""
    rng = parts.rng
    b = _Builder()
    b.add(anatomy.greeting(rng, parts.slot, anatomy.EMAIL_OPENERS[:-1]), BODY)
    b.add("\n\n")
    b.add(parts.text("review:personal"), BODY)
    sections = rng.sample(REVIEW_SECTIONS, rng.randint(3, 6))
    if "figures" not in sections:
        sections[0] = "figures"
    at = rng.randrange(len(sections))
    headings = rng.sample(structured.HEADINGS, len(sections))
    for i, (section, heading) in enumerate(zip(sections, headings, strict=True)):
        b.add("\n\n")
        b.add(fill(heading, rng, parts.slot), BODY)
        b.add("\n\n" if rng.random() < 0.6 else "\n")
        if section == "figures":
            lines = [parts.text("figures") for _ in range(rng.randint(2, 6))]
            b.add("\n".join(lines), BODY)
        elif section == "market":
            b.add(parts.text("market-notes"), BODY)
        else:
            b.add(parts.text(f"review:{section}"), BODY)
        if core is not None and i == at:
            b.add("\n\n")
            b.add(core.text, BODY, core.spans)
    b.add("\n\n")
    b.add(parts.text("review:personal"), BODY)
    b.add("\n\n")
    n = rng.choice((0, 1, 2, 3)) if rng.random() < options.disclaimer_rate else 0
    has_disclaimer = _signature(b, parts, persona, full=True, n_disclaimers=n)
    return b.build(), has_disclaimer


def compose_chat(lines: list[ChatLine], parts: _Parts, persona: Persona) -> Composed:
    rng = parts.rng
    before = _chatter(parts, rng.choice((0, 0, 1, 1, 2, 3)))
    after = _chatter(parts, rng.choice((0, 0, 1, 2)))
    style = rng.choice(anatomy.CHAT_STYLES)
    return anatomy.compose_transcript(
        before + lines + after, rng=rng, persona=persona, other=_other_person(rng, persona), style=style
    )


def compose(
    shape: str,
    template: str | None,
    *,
    style: str,
    rng: random.Random,
    banks: SplitBanks,
    split: str,
    vocabulary: Vocabulary = BASE,
    options: Options = Options(),
    position: str | None = None,
) -> Message:
    """Render one message of `shape` around `template` (None for the coreless shapes)."""
    if shape not in SHAPES:
        raise CorpusError(f"unknown message shape {shape!r}")
    persona = draw_persona(rng)
    slots = Slots(rng, persona, vocabulary)
    parts = _Parts(banks, split, rng, slots)
    has_disclaimer = False
    channel = "email"
    if shape == "short":
        channel = rng.choices(("email", "chat", "sms"), weights=SHORT_CHANNELS[style])[0]
        core = core_of(template, style=style, rng=rng, slots=slots)
        framed = frame_short(core, channel=channel, informal=style == "informal", rng=rng, slot=slots)
        composed = Composed(framed.text, framed.spans, [[0, len(framed.text), BODY]])
    elif shape == "padded":
        core = core_of(template, style=style, rng=rng, slots=slots)
        framed = frame_padded(
            core,
            position=position or rng.choice(PADDING_POSITIONS),
            rng=rng,
            slot=slots,
            target=rng.randint(*PADDING_PRE_TOKENS),
        )
        composed = Composed(framed.text, framed.spans, [])
    elif shape in ("email", "business_email"):
        core = core_of(template, style=style, rng=rng, slots=slots) if template else None
        composed, has_disclaimer = compose_email(core, parts, persona, options)
    elif shape in ("reply", "forward"):
        core = core_of(template, style=style, rng=rng, slots=slots)
        composed, has_disclaimer = compose_reply(core, parts, persona, options, forward=shape == "forward")
    elif shape == "long":
        core = core_of(template, style=style, rng=rng, slots=slots) if template else None
        composed, has_disclaimer = compose_long(core, parts, persona, options)
    elif shape == "review":
        core = core_of(template, style=style, rng=rng, slots=slots) if template else None
        composed, has_disclaimer = compose_review(core, parts, persona, options)
    elif shape == "chat":
        channel = "chat"
        lines = anatomy.split_chat_family(render(template, rng=rng, slot=slots))
        composed = compose_chat(lines, parts, persona)
    elif shape == "chat_line":
        channel = "chat"
        core = core_of(template, style="informal", rng=rng, slots=slots)
        composed = compose_chat([ChatLine("self", core.text, tuple(core.spans))], parts, persona)
    else:  # chatter
        channel = "chat"
        lines = _chatter(parts, rng.randint(3, 7))
        if not any(line.who == "self" for line in lines):
            lines.append(ChatLine("self", parts.text("chatter")))
        composed = compose_chat(lines, parts, persona)
    _check(composed, template or shape)
    return Message(
        body=composed.text,
        spans=list(composed.spans),
        channel=channel,
        sender=persona.sender(channel, rng),
        structure=composed.structure,
        parts=tuple(parts.used),
        has_disclaimer=has_disclaimer,
    )


def _check(composed: Composed, what: str) -> None:
    text = composed.text
    if text != text.strip():
        raise CorpusError(f"{what!r} rendered text with surrounding whitespace: {text[:80]!r}")
    for start, end in composed.spans:
        if not 0 <= start < end <= len(text) or text[start:end] != text[start:end].strip():
            raise CorpusError(f"{what!r} produced a bad span {start, end} in {text[:200]!r}")
