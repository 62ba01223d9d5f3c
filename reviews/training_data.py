"""Reviewed decisions as labelled training data (the brief: collect new phrasings as labelled
examples and fine-tune a new version; do not move the threshold).

A message's label is its latest decision that no later decision superseded, and only once the
message is decided: a message whose latest decision is an escalation, or that is still in review
or escalated for another reason (a blind double review waiting for its second reviewer, or whose
two reviewers disagreed and wait for a compliance admin), is left out: nobody has decided it. So
are bodies whose messages were decided differently (contradictory), and messages with a part
whose text could not be read (scoring.routing.has_unread_part): the decision is about a message
nobody read whole, and the body trained on is not all of it. Rows are de-duplicated by body and
carry their provenance, so a trained version can say where its extra data came from."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from reviews.models import ReviewDecision, Verdict
from scoring.constants import NO_CLAIM, MessageStatus
from scoring.routing import has_unread_part


@dataclass(frozen=True)
class FinalDecision:
    """The decision that stands for one message."""

    message_id: int
    body: str
    decision_id: int
    reviewer_id: int
    verdict: str
    claim_type: str | None
    agrees_with_model: bool | None
    message_status: str = MessageStatus.DECIDED
    unread_part: bool = False

    @property
    def is_final(self) -> bool:
        """Whether this decision labels the message: the message is decided, not escalated or
        waiting for a second reviewer, and the decision is not an escalation."""
        return self.message_status == MessageStatus.DECIDED and self.verdict != Verdict.ESCALATE


@dataclass
class ExportSummary:
    rows: int = 0
    messages: int = 0
    escalated_left_out: int = 0
    contradictory_left_out: int = 0
    unread_left_out: int = 0
    duplicates_merged: int = 0
    by_label: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def final_decisions(*, since: datetime | None = None) -> Iterator[FinalDecision]:
    """Each reviewed message's standing decision (latest by chain sequence among those nobody
    superseded) with the message's status, oldest message first; `FinalDecision.is_final` says
    whether it labels the message. One query, streamed."""
    decisions = ReviewDecision.objects.filter(superseded_by__isnull=True)
    if since is not None:
        decisions = decisions.filter(created_at__gte=since)
    rows = decisions.order_by("message_id", "-sequence").values_list(
        "message_id",
        "id",
        "reviewer_id",
        "verdict",
        "claim_type__code",
        "agrees_with_model",
        "message__body",
        "message__status",
        "message__attachments",
    )
    last_message = None
    for (
        message_id,
        decision_id,
        reviewer_id,
        verdict,
        code,
        agrees,
        body,
        status,
        attachments,
    ) in rows.iterator(chunk_size=2000):
        if message_id == last_message:
            continue  # an older standing decision of the same message: the newest one counts
        last_message = message_id
        yield FinalDecision(
            message_id,
            body,
            decision_id,
            reviewer_id,
            verdict,
            code,
            agrees,
            status,
            has_unread_part(attachments),
        )


def _label(decision: FinalDecision) -> tuple[int, str]:
    if decision.verdict == Verdict.CLAIM:
        return 1, decision.claim_type or NO_CLAIM
    return 0, NO_CLAIM


def training_rows(decisions: Iterable[FinalDecision]) -> tuple[list[dict], ExportSummary]:
    """Pure: turn standing decisions into de-duplicated training rows with provenance."""
    summary = ExportSummary()
    by_body: dict[str, list[FinalDecision]] = defaultdict(list)
    for decision in decisions:
        summary.messages += 1
        if not decision.is_final:
            summary.escalated_left_out += 1
            continue
        if decision.unread_part:
            summary.unread_left_out += 1
            continue
        by_body[decision.body].append(decision)
    rows: list[dict] = []
    for body, group in by_body.items():
        labels = {_label(d) for d in group}
        if len(labels) > 1:
            summary.contradictory_left_out += len(group)
            continue
        label, claim_type = labels.pop()
        summary.duplicates_merged += len(group) - 1
        summary.by_label[claim_type] = summary.by_label.get(claim_type, 0) + 1
        agreement = {d.agrees_with_model for d in group if d.agrees_with_model is not None}
        rows.append(
            {
                "id": "rev-" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:16],
                "body": body,
                "label": label,
                "claim_type": claim_type,
                "provenance": {
                    "decision_ids": sorted(d.decision_id for d in group),
                    "message_ids": sorted(d.message_id for d in group),
                    "reviewer_count": len({d.reviewer_id for d in group}),
                    "model_agreed": agreement.pop() if len(agreement) == 1 else None,
                },
            }
        )
    summary.rows = len(rows)
    return rows, summary


def training_data_export(*, since: datetime | None = None) -> tuple[list[dict], ExportSummary]:
    return training_rows(final_decisions(since=since))


def as_jsonl(rows: Iterable[dict]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n"
