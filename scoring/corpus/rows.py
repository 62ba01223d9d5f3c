"""From a template family to a finished row: persona, channel, slots, style, framing."""

from __future__ import annotations

import random

from scoring.corpus.framing import PADDING_POSITIONS, frame_padded, frame_short
from scoring.corpus.messages import Message, core_of
from scoring.corpus.render import Rendered
from scoring.corpus.schema import CHANNELS, NO_CLAIM, CorpusError
from scoring.corpus.vocab import BASE, Slots, Vocabulary, draw_persona

Family = tuple[str, str]

# Channel mix per style: long messages are emails; informal ones are chat or SMS.
CHANNEL_WEIGHTS: dict[str, tuple[int, int, int]] = {
    "plain": (45, 35, 20),
    "informal": (0, 65, 35),
    "padded": (100, 0, 0),
}
# Padding size in pre-tokens (words and punctuation), a lower bound of WordPiece tokens;
# calibrated so that the padding measures roughly 200-600 MiniLM WordPiece tokens.
PADDING_PRE_TOKENS: tuple[int, int] = (200, 500)
MAX_ATTEMPTS = 60


def render_message(
    template: str,
    *,
    style: str,
    rng: random.Random,
    vocabulary: Vocabulary = BASE,
    position: str | None = None,
) -> Message:
    """Render one message from a family template in the given style."""
    persona = draw_persona(rng)
    channel = rng.choices(CHANNELS, weights=CHANNEL_WEIGHTS[style])[0]
    slots = Slots(rng, persona, vocabulary)
    core = core_of(template, style=style, rng=rng, slots=slots)
    if style == "padded":
        framed = frame_padded(
            core,
            position=position or rng.choice(PADDING_POSITIONS),
            rng=rng,
            slot=slots,
            target=rng.randint(*PADDING_PRE_TOKENS),
        )
    else:
        framed = frame_short(core, channel=channel, informal=style == "informal", rng=rng, slot=slots)
    _check(framed, template)
    structure = [] if style == "padded" else [[0, len(framed.text), "body"]]
    return Message(framed.text, framed.spans, channel, persona.sender(channel, rng), structure)


def _check(framed: Rendered, template: str) -> None:
    text = framed.text
    if text != text.strip() or "  " in text or " ," in text or " ." in text.replace(" ...", ""):
        raise CorpusError(f"template {template!r} rendered badly spaced text: {text!r}")
    for start, end in framed.spans:
        if not 0 <= start < end <= len(text) or text[start:end] != text[start:end].strip():
            raise CorpusError(f"template {template!r} produced a bad span {start, end} in {text!r}")


def draw_unique(
    template: str,
    *,
    style: str,
    rng: random.Random,
    seen: set[str],
    vocabulary: Vocabulary = BASE,
    position: str | None = None,
    family_id: str = "",
) -> Message:
    """Render until the body is one not in `seen` (and add it); fail loudly if impossible."""
    for _ in range(MAX_ATTEMPTS):
        message = render_message(template, style=style, rng=rng, vocabulary=vocabulary, position=position)
        if message.body not in seen:
            seen.add(message.body)
            return message
    raise CorpusError(f"family {family_id or template!r}: no new body after {MAX_ATTEMPTS} draws")


def make_row(
    *,
    row_id: str,
    message: Message,
    claim_type: str,
    split: str,
    slices: tuple[str, ...] | list[str],
    template: str,
) -> dict:
    """A row in the schema's key order."""
    label = 0 if claim_type == NO_CLAIM else 1
    return {
        "id": row_id,
        "body": message.body,
        "label": label,
        "claim_type": claim_type,
        "rationales": [[start, end] for start, end in message.spans] if label else [],
        "split": split,
        "slices": list(slices),
        "channel": message.channel,
        "sender": message.sender,
        "template": template,
        "structure": [list(part) for part in message.structure],
        "parts": list(message.parts),
    }
