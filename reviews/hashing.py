"""Canonical content and hash of a review decision: the audit chain's one hashing function.

Pure (no Django): the decision service, the bulk seeder of `bench_web` and the chain verifier
all hash through `record_hash`, so a record hashed at write time and re-hashed from the stored
row at verification time produce the same bytes.

Canonical form: JSON with sorted keys, no whitespace, ASCII only; datetimes as UTC ISO-8601
with microseconds and a trailing "Z"; floats written with the fixed format "%.17g" (exact for
an IEEE double, the same in any language's printf); NaN and infinities are refused.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

GENESIS_HASH = "0" * 64
FLOAT_FORMAT = ".17g"

# The stored columns a record's hash covers, in no particular order (keys are sorted). The
# previous record's hash is part of the content: that is what makes it a chain.
HASHED_FIELDS: tuple[str, ...] = (
    "sequence",
    "message_id",
    "reviewer_id",
    "verdict",
    "claim_type_id",
    "note",
    "escalation_reason",
    "supersedes_id",
    "supersede_reason",
    "is_second_level",
    "snapshot",
    "model_version_id",
    "model_score",
    "model_threshold",
    "model_flagged",
    "model_claim_type_id",
    "is_qa_sample",
    "agrees_with_model",
    "claim_type_matches",
    "created_at",
    "previous_hash",
)


def _encode(value: Any, out: list[str]) -> None:
    if value is None or isinstance(value, bool | str):
        out.append(json.dumps(value, ensure_ascii=True))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} cannot be hashed: only finite numbers are allowed.")
        out.append(format(value, FLOAT_FORMAT))
    elif isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("A naive datetime cannot be hashed: the chain stores UTC instants.")
        out.append(json.dumps(value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")))
    elif isinstance(value, Mapping):
        out.append("{")
        for index, key in enumerate(sorted(value)):
            if not isinstance(key, str):
                raise ValueError(f"Mapping key {key!r} is not a string.")
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=True))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise ValueError(f"{type(value).__name__} values cannot be hashed canonically.")


def canonical_json(value: Any) -> str:
    """The canonical JSON text of `value` (see the module docstring for the rules)."""
    out: list[str] = []
    _encode(value, out)
    return "".join(out)


def record_content(record: Mapping[str, Any] | object) -> dict[str, Any]:
    """The hashed content of a decision, from a mapping (a `.values()` row) or a model instance."""
    if isinstance(record, Mapping):
        return {name: record[name] for name in HASHED_FIELDS}
    return {name: getattr(record, name) for name in HASHED_FIELDS}


def record_hash(record: Mapping[str, Any] | object) -> str:
    """sha256 hex digest of the canonical content of a decision."""
    text = canonical_json(record_content(record))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class BrokenRecord:
    """The first record at which the chain does not hold, and why."""

    sequence: int
    record_id: int | None
    reason: str


@dataclass(frozen=True)
class ChainReport:
    """Result of walking the chain from its first record to its last."""

    count: int
    broken: BrokenRecord | None
    head_hash: str

    @property
    def intact(self) -> bool:
        return self.broken is None

    def summary(self) -> str:
        if self.broken is None:
            return f"intact, {self.count} records"
        b = self.broken
        return f"BROKEN at record #{b.sequence} (id {b.record_id}): {b.reason}"


def chain_verify(
    records: Iterable[Mapping[str, Any]], *, first_sequence: int = 1, previous_hash: str = GENESIS_HASH
) -> ChainReport:
    """Walk records in sequence order (each a mapping with the hashed fields plus `id` and
    `content_hash`) and return the first place where the chain fails: a sequence gap (a
    record deleted or inserted out of order), a `previous_hash` that is not the preceding
    record's hash, or a stored hash that is not the hash of the stored content (an edit).
    `first_sequence` and `previous_hash` start the walk part-way (after a checkpoint)."""
    expected_previous = previous_hash
    expected_sequence = first_sequence
    count = 0
    iterator: Iterator[Mapping[str, Any]] = iter(records)
    for record in iterator:
        sequence = record["sequence"]
        record_id = record.get("id")
        if sequence != expected_sequence:
            reason = (
                f"sequence jumps from {expected_sequence - 1} to {sequence}: "
                "a record is missing or out of order"
            )
            return ChainReport(count, BrokenRecord(sequence, record_id, reason), expected_previous)
        if record["previous_hash"] != expected_previous:
            reason = "previous_hash does not match the preceding record's hash"
            return ChainReport(count, BrokenRecord(sequence, record_id, reason), expected_previous)
        recomputed = record_hash(record)
        if recomputed != record["content_hash"]:
            reason = "content does not match its stored hash (the record was altered)"
            return ChainReport(count, BrokenRecord(sequence, record_id, reason), expected_previous)
        expected_previous = record["content_hash"]
        expected_sequence = sequence + 1
        count += 1
    return ChainReport(count, None, expected_previous)
