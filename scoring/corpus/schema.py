"""The corpus row schema and its validation. Pure Python: no Django import.

A row is one message: `{"id", "body", "label", "claim_type", "rationales", "split", "slices",
"channel", "sender", "template", "structure", "parts"}` in that key order. Rationales are
[start, end) character offsets (Python str indices, i.e. Unicode code points) into `body`;
`structure` lists the [start, end, kind] of the message's parts as the generator built them
(body, signature, quoted), `parts` the family ids of the content parts it drew (business
paragraphs, disclaimers, quoted mail, chat lines) besides its core `template`."""

from __future__ import annotations

import re
from typing import Any

NO_CLAIM = "no_claim"
# Must equal scoring.constants.CLAIM_TYPE_CODES (a test checks it); repeated here because
# scoring.constants imports Django and the generator must not.
CLAIM_TYPES: tuple[str, ...] = (
    "guaranteed_returns",
    "risk_free",
    "performance_forecast",
    "regulatory_endorsement",
)
SPLITS: tuple[str, ...] = ("train", "val", "test")
EXTRA_SPLITS: tuple[str, ...] = ("drift", "traffic")
CHANNELS: tuple[str, ...] = ("email", "chat", "sms")
# Slice tags in their canonical order. "standard" means: none of the special tags.
SLICES: tuple[str, ...] = (
    "standard",
    "hard_negative",
    "negation",
    "split_sentence",
    "padded",
    "informal",
    "signature",
    "quoted_history",
    "long_email",
    "chat_transcript",
    "novel_phrasing",
)
# Tags used only outside the corpus (generate_drift_messages / generate_traffic_messages).
EXTRA_SLICES: tuple[str, ...] = ("drift",)
ROW_KEYS: tuple[str, ...] = (
    "id",
    "body",
    "label",
    "claim_type",
    "rationales",
    "split",
    "slices",
    "channel",
    "sender",
    "template",
    "structure",
    "parts",
)
STRUCTURE_KINDS: tuple[str, ...] = ("body", "signature", "quoted")
ID_PATTERN = re.compile(r"^cw-\d{5}$")


class CorpusError(ValueError):
    """A corpus file or row is malformed, or a generator argument is invalid."""


def validate_row(row: Any, *, allow_extra_splits: bool = False) -> list[str]:
    """Return the problems of one row (empty list when it is valid)."""
    if not isinstance(row, dict):
        return [f"row is a {type(row).__name__}, not an object"]
    problems: list[str] = []
    if tuple(row) != ROW_KEYS:
        return [f"keys are {list(row)}, expected exactly {list(ROW_KEYS)} in that order"]
    splits = SPLITS + EXTRA_SPLITS if allow_extra_splits else SPLITS
    slices = SLICES + EXTRA_SLICES if allow_extra_splits else SLICES
    if not isinstance(row["id"], str) or not (allow_extra_splits or ID_PATTERN.match(row["id"])):
        problems.append(f"id {row['id']!r} is not of the form cw-00001")
    body = row["body"]
    if not isinstance(body, str) or not body.strip():
        problems.append("body is empty or not a string")
        body = ""
    elif body != body.strip():
        problems.append("body has leading or trailing whitespace")
    label = row["label"]
    if label not in (0, 1) or isinstance(label, bool):
        problems.append(f"label {label!r} is not 0 or 1")
    claim_type = row["claim_type"]
    if label == 1 and claim_type not in CLAIM_TYPES:
        problems.append(f"claim row has claim_type {claim_type!r}")
    if label == 0 and claim_type != NO_CLAIM:
        problems.append(f"negative row has claim_type {claim_type!r}, expected {NO_CLAIM!r}")
    problems.extend(_span_problems(row["rationales"], body, label))
    if row["split"] not in splits:
        problems.append(f"split {row['split']!r} is not one of {splits}")
    tags = row["slices"]
    if not isinstance(tags, list) or not tags or any(tag not in slices for tag in tags):
        problems.append(f"slices {tags!r} must be a non-empty list of {slices}")
    elif len(set(tags)) != len(tags) or sorted(tags, key=slices.index) != tags:
        problems.append(f"slices {tags!r} must be unique and in canonical order")
    elif "standard" in tags and len(tags) > 1:
        problems.append("'standard' cannot be combined with another slice tag")
    if row["channel"] not in CHANNELS:
        problems.append(f"channel {row['channel']!r} is not one of {CHANNELS}")
    for key in ("sender", "template"):
        if not isinstance(row[key], str) or not row[key]:
            problems.append(f"{key} is empty or not a string")
    problems.extend(_structure_problems(row["structure"], body))
    if not isinstance(row["parts"], list) or not all(isinstance(p, str) and p for p in row["parts"]):
        problems.append("parts must be a list of family ids")
    return problems


def _structure_problems(structure: Any, body: str) -> list[str]:
    if not isinstance(structure, list):
        return ["structure is not a list"]
    previous_end = 0
    for part in structure:
        if (
            not isinstance(part, list)
            or len(part) != 3
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in part[:2])
            or part[2] not in STRUCTURE_KINDS
        ):
            return [f"structure part {part!r} is not [start, end, kind]"]
        start, end, _ = part
        if not previous_end <= start < end <= len(body):
            return [f"structure part {part!r} is out of order or outside the body"]
        previous_end = end
    return []


def _span_problems(spans: Any, body: str, label: Any) -> list[str]:
    if not isinstance(spans, list):
        return ["rationales is not a list"]
    if label == 0:
        return [] if spans == [] else ["a negative row has rationales"]
    if not spans:
        return ["a claim row has no rationale"]
    problems = []
    previous_end = 0
    for span in spans:
        if (
            not isinstance(span, list)
            or len(span) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in span)
        ):
            problems.append(f"rationale {span!r} is not [start, end]")
            continue
        start, end = span
        if not 0 <= start < end <= len(body):
            problems.append(f"rationale {span} lies outside the body (length {len(body)})")
        elif start < previous_end:
            problems.append(f"rationale {span} overlaps or precedes the previous one")
        elif body[start:end] != body[start:end].strip():
            problems.append(f"rationale {span} starts or ends with whitespace")
        previous_end = max(previous_end, end)
    return problems
