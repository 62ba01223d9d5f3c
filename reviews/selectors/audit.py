"""Reads of the audit: the whole chain walked against its checkpoints and the evidence each record
judged, and one record's evidence compared with its snapshot (reviews.audit holds the rules)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from explanations.models import Explanation, ExplanationStatus
from reviews.audit import (
    EXPLANATION_COMPARED_FIELDS,
    AuditReport,
    Comparison,
    EvidenceCheck,
    Finding,
    FindingKind,
    checkpoint_chain_findings,
    checkpoint_coverage_finding,
    checkpoint_log_finding,
    checkpoint_log_read,
    evidence_compare,
    findings_capped,
)
from reviews.checkpoint_store import (
    CheckpointLogMissing,
    CheckpointLogUnreadable,
    checkpoint_keys,
    checkpoint_store,
)
from reviews.hashing import HASHED_FIELDS, chain_verify
from reviews.models import ReviewDecision

EXPLANATION_CHUNK = 500


def _explanation_values(ids: list[int]) -> dict[int, dict[str, Any]]:
    rows = Explanation.objects.filter(pk__in=ids).values("id", "words", *EXPLANATION_COMPARED_FIELDS)
    return {row["id"]: row for row in rows}


@dataclass(frozen=True)
class RecordEvidence:
    """One record's evidence as stored now: its comparison with the snapshot, and the stored
    explanation's words (the heat-map; [] when the explanation is gone or failed)."""

    check: EvidenceCheck
    words: list[dict[str, Any]]


def record_evidence(decision: ReviewDecision) -> RecordEvidence:
    """The message text and the explanation stored now, against what `decision`'s snapshot
    recorded (one query: the message is loaded with the decision)."""
    shown = decision.snapshot.get("explanation") or None
    explanation = _explanation_values([shown["id"]]).get(shown["id"]) if shown else None
    check = evidence_compare(decision.snapshot, body=decision.message.body, explanation=explanation)
    words = explanation["words"] if explanation and explanation["status"] == ExplanationStatus.OK else []
    return RecordEvidence(check, words or [])


def audit_chain_report(
    *,
    progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None,
    now: datetime | None = None,
    evidence: bool = True,
) -> AuditReport:
    """Walk the whole decision chain in sequence order, streaming rows from the database, and
    report every finding: where the chain breaks, what the checkpoint log says about truncation
    and rewrites (and forged, removed or missing checkpoints, or a log that is missing or
    unreadable while records exist), and every record whose message
    text or explanation is no longer what its snapshot recorded. `progress(rows, total)` may
    wrap the row iterator (the command passes a tqdm bar). `evidence=False` leaves the message
    texts and explanations out (the audit page: they are the bulk of the bytes; the command and
    each record's page compare them)."""
    now = now or timezone.now()
    store = checkpoint_store()
    log_problem: CheckpointLogUnreadable | None = None
    try:
        lines = store.lines()
    except CheckpointLogUnreadable as exc:  # reported below, once the chain's size is known
        lines, log_problem = [], exc
    log = checkpoint_log_read(lines, checkpoint_keys())
    wanted = {checkpoint.sequence for checkpoint in log.checkpoints}
    latest_sequence = log.latest.sequence if log.latest is not None else 0
    hashes_at: dict[int, str] = {}
    seen: dict[str, Any] = {"last": 0, "count": 0, "compared": 0, "words_not_recorded": 0, "oldest": None}
    first_uncovered: list[tuple[int, datetime]] = []
    evidence_findings: list[Finding] = []
    pending: list[tuple[int, int, dict[str, Any], str]] = []

    def check_explanations() -> None:
        values = _explanation_values([snapshot["explanation"]["id"] for _, _, snapshot, _ in pending])
        for sequence, record_id, snapshot, body in pending:
            stored = values.get(snapshot["explanation"]["id"])
            check = evidence_compare(snapshot, body=body, explanation=stored)
            seen["words_not_recorded"] += check.words == Comparison.NOT_RECORDED
            evidence_findings.extend(check.findings(sequence=sequence, record_id=record_id))
        pending.clear()

    def observed(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for row in rows:
            sequence = row["sequence"]
            seen["last"], seen["count"] = sequence, seen["count"] + 1
            if seen["oldest"] is None:
                seen["oldest"] = row["created_at"]
            if sequence in wanted:
                hashes_at[sequence] = row["content_hash"]
            if sequence > latest_sequence and not first_uncovered:
                first_uncovered.append((sequence, row["created_at"]))
            if not evidence:
                yield row
                continue
            seen["compared"] += 1
            if row["snapshot"].get("explanation"):
                pending.append((sequence, row["id"], row["snapshot"], row["body"]))
                if len(pending) >= EXPLANATION_CHUNK:
                    check_explanations()
            else:
                check = evidence_compare(row["snapshot"], body=row["body"], explanation=None)
                evidence_findings.extend(check.findings(sequence=sequence, record_id=row["id"]))
            yield row

    columns: dict[str, Any] = {"body": F("message__body")} if evidence else {}
    rows: Iterable[Any] = (
        ReviewDecision.objects.order_by("sequence")
        .values("id", "content_hash", *HASHED_FIELDS, **columns)
        .iterator(chunk_size=2_000)
    )
    if progress is not None:
        rows = progress(rows, ReviewDecision.objects.count())
    walk = observed(rows)
    chain = chain_verify(walk)
    for _ in walk:  # past a break, the rest of the rows still meet the checkpoints and evidence checks
        pass
    if pending:
        check_explanations()

    findings: list[Finding] = []
    if chain.broken is not None:
        b = chain.broken
        findings.append(
            Finding(
                FindingKind.CHAIN_BROKEN,
                f"BROKEN at record #{b.sequence} (id {b.record_id}): {b.reason}",
                b.sequence,
                b.record_id,
            )
        )
    unavailable = checkpoint_log_finding(
        str(log_problem) if log_problem is not None else None,
        missing=isinstance(log_problem, CheckpointLogMissing),
        location=store.location,
        count=seen["count"],
        oldest=seen["oldest"],
        now=now,
        grace=timedelta(seconds=settings.AUDIT_CHECKPOINT_GRACE_SECONDS),
    )
    if unavailable is not None:
        findings.append(unavailable)
    findings.extend(log.findings)
    findings.extend(
        checkpoint_chain_findings(
            log.checkpoints, last_sequence=seen["last"], count=seen["count"], hashes_at=hashes_at
        )
    )
    coverage = checkpoint_coverage_finding(
        log.latest,
        first_uncovered=first_uncovered[0] if first_uncovered else None,
        now=now,
        grace=timedelta(seconds=settings.AUDIT_CHECKPOINT_GRACE_SECONDS),
    )
    if coverage is not None:
        findings.append(coverage)
    findings.extend(evidence_findings)
    kept, omitted = findings_capped(findings)
    return AuditReport(
        chain=chain,
        findings=kept,
        omitted=omitted,
        log=log,
        evidence_checked=evidence,
        evidence_compared=seen["compared"],
        words_not_recorded=seen["words_not_recorded"],
    )
