"""The CSV export of decision records: its columns (one getter each, from a queryset made by
`records_list(..., with_snapshot=True)`), spreadsheet formulas neutralised, streamed line by
line in constant memory."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

from reviews.constants import CSV_CHUNK_SIZE
from reviews.models import ReviewDecision


class _Echo:
    """csv.writer target that hands each line back instead of buffering it."""

    def write(self, value: str) -> str:
        return value


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """Neutralise spreadsheet formulas in free text (CSV injection): prefix with a quote."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return "" if value is None else value


def _conversation_of(decision: ReviewDecision, kind: str) -> int | str:
    """The message's conversation id when it is of `kind` (an email thread, a chat)."""
    message = decision.message
    if message.conversation_id is None or message.conversation.kind != kind:
        return ""
    return message.conversation_id


CSV_COLUMNS: list[tuple[str, Any]] = [
    ("sequence", lambda d: d.sequence),
    ("decided_at", lambda d: d.created_at.isoformat()),
    ("external_id", lambda d: d.message.external_id),
    ("reviewer", lambda d: d.reviewer_then or d.reviewer.username),  # the username of the moment
    ("verdict", lambda d: d.verdict),
    ("claim_type", lambda d: d.claim_type.code if d.claim_type else ""),
    ("note", lambda d: d.note),
    ("escalation_reason", lambda d: d.escalation_reason),
    ("second_level", lambda d: d.is_second_level),
    ("supersedes_sequence", lambda d: d.supersedes.sequence if d.supersedes else ""),
    ("supersede_reason", lambda d: d.supersede_reason),
    ("model_version", lambda d: d.model_version.name if d.model_version else ""),
    ("model_score", lambda d: d.model_score),
    ("model_threshold", lambda d: d.model_threshold),
    ("model_flagged", lambda d: d.model_flagged),
    ("model_claim_type", lambda d: d.model_claim_type.code if d.model_claim_type else ""),
    ("qa_sample", lambda d: d.is_qa_sample),
    ("route_reason", lambda d: d.snapshot.get("message", {}).get("route_reason", "")),
    ("agrees_with_model", lambda d: d.agrees_with_model),
    ("claim_type_matches", lambda d: d.claim_type_matches),
    ("subject", lambda d: d.message.subject),
    ("thread_id", lambda d: _conversation_of(d, "email_thread")),
    ("conversation_id", lambda d: _conversation_of(d, "chat")),
    ("rule_codes", lambda d: " ".join(m["rule_code"] for m in d.snapshot.get("rule_matches", []))),
    ("explanation_id", lambda d: (d.snapshot.get("explanation") or {}).get("id")),
    ("explanation_passed", lambda d: (d.snapshot.get("explanation") or {}).get("passed")),
    ("content_hash", lambda d: d.content_hash),
    ("previous_hash", lambda d: d.previous_hash),
]


def records_csv_lines(queryset) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow([name for name, _ in CSV_COLUMNS])
    for decision in queryset.iterator(chunk_size=CSV_CHUNK_SIZE):
        yield writer.writerow([_cell(getter(decision)) for _, getter in CSV_COLUMNS])
