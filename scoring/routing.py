"""Routing after scoring, as pure functions (no Django).

flagged (score >= threshold) or a rule hit -> explain, then review; otherwise cleared, except a
message with a part whose text could not be read (an attachment in a password-protected zip, in
a charset nobody can decode: nothing in it was checked, so a person looks) and a random QA sample,
both reviewed too, the sample so that misses (false negatives) can be estimated.

A rule hit routes only where the sender's own words are: in a part of the message that routes
(scoring.segmentation: the body and the signature; quoted history only in a bare forward), so
a scam quoted under a warning or a client's "is it guaranteed?" in the history routes nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from scoring.rules import CompiledRules, RuleHit, match
from scoring.segmentation import Segment, routing_segments, segment

MODEL_FLAG = "model_flag"
RULE_HIT = "rule_hit"
MODEL_AND_RULE = "model_and_rule"
UNREAD_PART = "unread_part"
QA_SAMPLE = "qa_sample"
CLEARED = "cleared"


@dataclass(frozen=True)
class Route:
    reason: str
    needs_explanation: bool
    to_review: bool
    is_qa_sample: bool


def is_qa_sample(key: str, *, rate: float, salt: str) -> bool:
    """Deterministic draw for the QA sample: the same message always gets the same answer (so a
    retried task routes identically), and without the salt a sender cannot predict it."""
    if rate <= 0.0:
        return False
    if rate >= 1.0:
        return True
    digest = hashlib.sha256(f"{salt}:{key}".encode()).digest()
    draw = int.from_bytes(digest[:8], "big") / 2**64
    return draw < rate


def has_unread_part(attachments: object) -> bool:
    """Whether a message's stored attachments (scoring.models.Message.attachments) hold a part
    whose text could not be read (marked `"unreadable": true` by scoring.sources)."""
    return isinstance(attachments, list) and any(
        isinstance(a, dict) and a.get("unreadable") is True for a in attachments
    )


def route(
    *, score: float, threshold: float, rule_hit: bool, qa_sample: bool, unread_part: bool = False
) -> Route:
    """Where a scored message goes. A part that could not be read comes before the QA draw, so that
    the sample stays a uniform draw of the messages nothing else sends to review."""
    flagged = score >= threshold
    if flagged and rule_hit:
        return Route(MODEL_AND_RULE, needs_explanation=True, to_review=True, is_qa_sample=False)
    if flagged:
        return Route(MODEL_FLAG, needs_explanation=True, to_review=True, is_qa_sample=False)
    if rule_hit:
        return Route(RULE_HIT, needs_explanation=True, to_review=True, is_qa_sample=False)
    if unread_part:
        return Route(UNREAD_PART, needs_explanation=False, to_review=True, is_qa_sample=False)
    if qa_sample:
        return Route(QA_SAMPLE, needs_explanation=False, to_review=True, is_qa_sample=True)
    return Route(CLEARED, needs_explanation=False, to_review=False, is_qa_sample=False)


def routing_rule_hits(
    text: str,
    compiled: CompiledRules | None,
    *,
    segmented: bool = True,
    segments: Sequence[Segment] | None = None,
) -> list[RuleHit]:
    """The rule hits that route `text`: those inside a routing part of a segmented reading
    (`segments`, or scoring.segmentation.segment(text)), every hit when `segmented` is False."""
    if compiled is None or not len(compiled):
        return []
    hits = match(text, compiled)
    if not segmented or not hits:
        return hits
    parts = routing_segments(segment(text) if segments is None else segments)
    return [h for h in hits if any(p.start <= h.start and h.end <= p.end for p in parts)]
