"""Routing after scoring, as pure functions (no Django).

flagged (score >= threshold) or a rule hit -> explain, then review; otherwise cleared, except a
random QA sample that is reviewed too, so that misses (false negatives) can be estimated."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

MODEL_FLAG = "model_flag"
RULE_HIT = "rule_hit"
MODEL_AND_RULE = "model_and_rule"
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


def route(*, score: float, threshold: float, rule_hit: bool, qa_sample: bool) -> Route:
    flagged = score >= threshold
    if flagged and rule_hit:
        return Route(MODEL_AND_RULE, needs_explanation=True, to_review=True, is_qa_sample=False)
    if flagged:
        return Route(MODEL_FLAG, needs_explanation=True, to_review=True, is_qa_sample=False)
    if rule_hit:
        return Route(RULE_HIT, needs_explanation=True, to_review=True, is_qa_sample=False)
    if qa_sample:
        return Route(QA_SAMPLE, needs_explanation=False, to_review=True, is_qa_sample=True)
    return Route(CLEARED, needs_explanation=False, to_review=False, is_qa_sample=False)
