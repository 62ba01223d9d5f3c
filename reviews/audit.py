"""The audit beyond the hash chain: signed checkpoints that anchor the chain outside the database,
and the evidence a decision judged (the message text, the explanation) compared with its
snapshot. Each problem is a Finding of a named kind.

Pure (no Django): the checkpoint service signs through `checkpoint_sign`, the audit selector and
the record page compare through the functions here.

Why checkpoints. The chain alone proves only that the rows it finds link up: deleting the last N
decisions, wiping the table, or editing a row and re-hashing every later one leaves a chain that
verifies. A checkpoint is (sequence, head hash, count, time) signed with HMAC-SHA256 under
AUDIT_CHECKPOINT_KEY, a setting that is never stored in the database, and appended to a log
outside the database (reviews.checkpoint_store). Whoever can rewrite the decision table cannot
sign a checkpoint, so a chain that ends before a checkpoint's sequence was truncated, and a
record whose hash is not the one a checkpoint signed was rewritten. Each checkpoint also carries
the previous checkpoint's MAC, so a checkpoint removed from the log is seen too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from reviews.hashing import ChainReport, canonical_json

CHECKPOINT_VERSION = 1
CHECKPOINT_SIGNED_FIELDS = ("v", "sequence", "head_hash", "count", "written_at", "previous_mac")


class FindingKind(StrEnum):
    CHAIN_BROKEN = "chain_broken"
    TRUNCATED = "truncated"
    REWRITTEN = "rewritten"
    CHECKPOINT_FORGED = "checkpoint_forged"
    CHECKPOINT_REMOVED = "checkpoint_removed"
    CHECKPOINT_MISSING = "checkpoint_missing"
    CHECKPOINT_LOG_UNAVAILABLE = "checkpoint_log_unavailable"
    BODY_CHANGED = "body_changed"
    EXPLANATION_CHANGED = "explanation_changed"
    EXPLANATION_MISSING = "explanation_missing"


FINDING_TITLES: dict[FindingKind, str] = {
    FindingKind.CHAIN_BROKEN: "Chain broken",
    FindingKind.TRUNCATED: "Records removed from the end (truncation)",
    FindingKind.REWRITTEN: "Records rewritten and re-hashed",
    FindingKind.CHECKPOINT_FORGED: "Forged or unreadable checkpoint",
    FindingKind.CHECKPOINT_REMOVED: "Checkpoint removed from the log",
    FindingKind.CHECKPOINT_MISSING: "Missing checkpoint",
    FindingKind.CHECKPOINT_LOG_UNAVAILABLE: "Checkpoint log missing or unreadable",
    FindingKind.BODY_CHANGED: "Message text differs from what was reviewed",
    FindingKind.EXPLANATION_CHANGED: "Explanation differs from what the reviewer saw",
    FindingKind.EXPLANATION_MISSING: "Explanation the reviewer saw is gone",
}


@dataclass(frozen=True)
class Finding:
    """One thing the audit found wrong, with the record it concerns where there is one."""

    kind: FindingKind
    detail: str
    sequence: int | None = None
    record_id: int | None = None

    @property
    def title(self) -> str:
        return FINDING_TITLES[self.kind]

    def line(self) -> str:
        return f"[{self.kind.value}] {self.title}: {self.detail}"


# --- Checkpoints -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """A signed statement that the chain had `count` records ending at `sequence` with
    `head_hash`, at `written_at`. `line` is its position in the log (1-based, not signed)."""

    sequence: int
    head_hash: str
    count: int
    written_at: datetime
    previous_mac: str
    mac: str
    line: int = 0

    def content(self) -> dict[str, Any]:
        return checkpoint_content(
            sequence=self.sequence,
            head_hash=self.head_hash,
            count=self.count,
            written_at=self.written_at,
            previous_mac=self.previous_mac,
        )

    def describe(self) -> str:
        return f"the checkpoint of {self.written_at:%Y-%m-%d %H:%M:%S} UTC (line {self.line} of the log)"


def checkpoint_content(
    *, sequence: int, head_hash: str, count: int, written_at: datetime, previous_mac: str
) -> dict[str, Any]:
    """The signed content of a checkpoint (CHECKPOINT_SIGNED_FIELDS)."""
    return {
        "v": CHECKPOINT_VERSION,
        "sequence": sequence,
        "head_hash": head_hash,
        "count": count,
        "written_at": written_at,
        "previous_mac": previous_mac,
    }


def checkpoint_mac(key: bytes, content: Mapping[str, Any]) -> str:
    """HMAC-SHA256 (hex) of the canonical JSON of a checkpoint's signed content."""
    text = canonical_json({name: content[name] for name in CHECKPOINT_SIGNED_FIELDS})
    return hmac.new(key, text.encode("ascii"), hashlib.sha256).hexdigest()


def checkpoint_sign(
    *, key: bytes, sequence: int, head_hash: str, count: int, written_at: datetime, previous_mac: str
) -> str:
    """The log line (canonical JSON, no newline) of a new checkpoint signed with `key`."""
    content = checkpoint_content(
        sequence=sequence, head_hash=head_hash, count=count, written_at=written_at, previous_mac=previous_mac
    )
    return canonical_json({**content, "mac": checkpoint_mac(key, content)})


def _parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def checkpoint_parse(text: str, *, line: int = 0) -> Checkpoint:
    """A checkpoint from its log line; ValueError when the line is not one."""
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.get("v") != CHECKPOINT_VERSION:
            raise ValueError("not a version-1 checkpoint")
        checkpoint = Checkpoint(
            sequence=int(raw["sequence"]),
            head_hash=str(raw["head_hash"]),
            count=int(raw["count"]),
            written_at=_parse_time(raw["written_at"]),
            previous_mac=str(raw["previous_mac"]),
            mac=str(raw["mac"]),
            line=line,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"line {line} of the checkpoint log is not a checkpoint ({exc})") from exc
    return checkpoint


def checkpoint_authentic(checkpoint: Checkpoint, keys: Sequence[bytes]) -> bool:
    """Whether one of `keys` (the current key, then retired ones) signed this checkpoint."""
    content = checkpoint.content()
    return any(hmac.compare_digest(checkpoint_mac(key, content), checkpoint.mac) for key in keys)


@dataclass(frozen=True)
class CheckpointLog:
    """The authentic checkpoints of a log, in the order written, and what was wrong with it."""

    checkpoints: list[Checkpoint]
    findings: list[Finding]

    @property
    def latest(self) -> Checkpoint | None:
        return self.checkpoints[-1] if self.checkpoints else None

    @property
    def first(self) -> Checkpoint | None:
        return self.checkpoints[0] if self.checkpoints else None


def checkpoint_log_read(lines: Iterable[str], keys: Sequence[bytes]) -> CheckpointLog:
    """Parse and authenticate a checkpoint log. A line that is not a checkpoint, or whose MAC no
    key verifies, is a forgery (it is then ignored); an authentic checkpoint whose previous MAC
    is not the MAC of the authentic checkpoint before it means checkpoints were removed."""
    checkpoints: list[Checkpoint] = []
    findings: list[Finding] = []
    previous_mac = ""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            checkpoint = checkpoint_parse(text, line=number)
        except ValueError as exc:
            findings.append(Finding(FindingKind.CHECKPOINT_FORGED, f"{exc}."))
            continue
        if not checkpoint_authentic(checkpoint, keys):
            findings.append(
                Finding(
                    FindingKind.CHECKPOINT_FORGED,
                    f"{checkpoint.describe()} claims record #{checkpoint.sequence} but its signature "
                    "does not verify with AUDIT_CHECKPOINT_KEY (or a retired key): it was forged or "
                    "altered, and it is ignored.",
                    sequence=checkpoint.sequence,
                )
            )
            continue
        if checkpoint.previous_mac != previous_mac:
            where = "the log's first checkpoints" if not checkpoints else "a checkpoint before it"
            findings.append(
                Finding(
                    FindingKind.CHECKPOINT_REMOVED,
                    f"{checkpoint.describe()} does not follow the checkpoint before it in the log: "
                    f"{where} were removed.",
                    sequence=checkpoint.sequence,
                )
            )
        checkpoints.append(checkpoint)
        previous_mac = checkpoint.mac
    return CheckpointLog(checkpoints, findings)


def checkpoint_chain_findings(
    checkpoints: Sequence[Checkpoint], *, last_sequence: int, count: int, hashes_at: Mapping[int, str]
) -> list[Finding]:
    """Compare authentic checkpoints with the chain as stored: `last_sequence` and `count` of its
    rows, and `hashes_at` the stored hash of every record a checkpoint names (that is present).

    Truncation: a checkpoint names a record beyond the chain's end. Rewrite: the stored hash of a
    record a checkpoint names is not the hash it signed (the record, or one before it, was
    rewritten and everything after it re-hashed, or the chain was cut and re-grown)."""
    findings: list[Finding] = []
    furthest = max(checkpoints, key=lambda c: c.sequence, default=None)
    if furthest is not None and furthest.sequence > last_sequence:
        ends = f"ends at record #{last_sequence}" if last_sequence else "is empty"
        findings.append(
            Finding(
                FindingKind.TRUNCATED,
                f"the chain {ends} ({count} records), but {furthest.describe()} signed record "
                f"#{furthest.sequence} ({furthest.count} records): "
                f"{furthest.sequence - last_sequence} records were removed from the end.",
                sequence=last_sequence + 1,
            )
        )
    matched = 0
    for checkpoint in sorted(checkpoints, key=lambda c: c.sequence):
        stored = hashes_at.get(checkpoint.sequence)
        if stored is None:
            continue  # beyond the end (truncation, above) or removed from the middle (a gap)
        if stored == checkpoint.head_hash:
            matched = max(matched, checkpoint.sequence)
            continue
        findings.append(
            Finding(
                FindingKind.REWRITTEN,
                f"record #{checkpoint.sequence} is stored with hash {stored[:16]}…, but "
                f"{checkpoint.describe()} signed {checkpoint.head_hash[:16]}…: a record after "
                f"#{matched} and up to #{checkpoint.sequence} was rewritten and the chain re-hashed.",
                sequence=checkpoint.sequence,
            )
        )
        break  # every later checkpoint differs too; the first one places the rewrite
    return findings


def checkpoint_coverage_finding(
    latest: Checkpoint | None,
    *,
    first_uncovered: tuple[int, datetime] | None,
    now: datetime,
    grace: timedelta,
) -> Finding | None:
    """A record older than `grace` that no checkpoint covers: the checkpoint task is not running,
    or the checkpoints that covered it are gone. `first_uncovered` is (sequence, created_at) of
    the first record after the latest checkpoint."""
    if first_uncovered is None:
        return None
    sequence, created_at = first_uncovered
    if created_at > now - grace:
        return None
    after = (
        f"the latest checkpoint ({latest.describe()}) ends at record #{latest.sequence}"
        if latest is not None
        else "the checkpoint log holds no checkpoint"
    )
    return Finding(
        FindingKind.CHECKPOINT_MISSING,
        f"record #{sequence}, decided {created_at:%Y-%m-%d %H:%M:%S} UTC, is covered by no checkpoint "
        f"after more than {int(grace.total_seconds())} s: {after}. Is the checkpoint task "
        "(celery beat, reviews.tasks.audit_checkpoint) running, or were checkpoints removed?",
        sequence=sequence,
    )


def checkpoint_log_finding(
    problem: str | None,
    *,
    missing: bool,
    location: str,
    count: int,
    oldest: datetime | None,
    now: datetime,
    grace: timedelta,
) -> Finding | None:
    """The checkpoint log could not be read (`problem`, None when it was) while the chain holds
    `count` records, the oldest decided at `oldest`: without it truncation and rewrites cannot be
    checked. An unreadable log is a finding at once; a log that does not exist only once the
    oldest record is older than `grace` (before that, the checkpoint task may not have written
    the first checkpoint of a new deployment yet)."""
    if problem is None or not count:
        return None
    if missing and (oldest is None or oldest > now - grace):
        return None
    what = "does not exist" if missing else "cannot be read"
    return Finding(
        FindingKind.CHECKPOINT_LOG_UNAVAILABLE,
        f"the checkpoint log ({location}) {what} ({problem}), but the chain holds {count} records: "
        "no record can be checked for truncation or a re-hashed rewrite. Restore the log from its "
        "append-only copy (or the claimwatch.audit log lines), or find why it cannot be read "
        "(AUDIT_CHECKPOINT_DIR, its permissions, the store AUDIT_CHECKPOINT_STORE).",
    )


# --- Evidence: what the reviewer saw, compared with what is stored now -----------------------------

# The explanation fields a decision's snapshot keeps by value, compared with the stored row.
EXPLANATION_COMPARED_FIELDS = (
    "method",
    "status",
    "failure_reason",
    "passed",
    "pass_rule",
    "verdict_text",
    "k",
    "top_words",
    "score_full",
    "score_without_top",
    "score_top_only",
    "comprehensiveness",
    "sufficiency",
    "random_baseline",
    "aopc",
    "flipped",
)


def body_digest(body: str) -> str:
    """sha256 (hex) of a message body's UTF-8 bytes (as scoring stores `body_sha256`)."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def words_digest(words: Any) -> str:
    """sha256 (hex) of the canonical JSON of an explanation's word attributions (the heat-map)."""
    return hashlib.sha256(canonical_json(words).encode("ascii")).hexdigest()


class Comparison(StrEnum):
    MATCHES = "matches"
    DIFFERS = "differs"
    MISSING = "missing"
    NOT_RECORDED = "not_recorded"  # the snapshot holds nothing to compare with


@dataclass(frozen=True)
class EvidenceCheck:
    """The stored message text and explanation against a decision's snapshot."""

    body: Comparison
    explanation: Comparison
    words: Comparison
    changed_fields: tuple[str, ...] = ()

    def findings(self, *, sequence: int, record_id: int | None) -> list[Finding]:
        found = []
        if self.body == Comparison.DIFFERS:
            found.append(
                Finding(
                    FindingKind.BODY_CHANGED,
                    f"record #{sequence}: the stored message text is not the text whose sha256 the "
                    "snapshot recorded.",
                    sequence,
                    record_id,
                )
            )
        if self.explanation == Comparison.MISSING:
            found.append(
                Finding(
                    FindingKind.EXPLANATION_MISSING,
                    f"record #{sequence}: the explanation the snapshot names no longer exists.",
                    sequence,
                    record_id,
                )
            )
        elif self.explanation == Comparison.DIFFERS or self.words == Comparison.DIFFERS:
            what = list(self.changed_fields) + (["words"] if self.words == Comparison.DIFFERS else [])
            found.append(
                Finding(
                    FindingKind.EXPLANATION_CHANGED,
                    f"record #{sequence}: the stored explanation differs from the snapshot in "
                    f"{', '.join(what)}.",
                    sequence,
                    record_id,
                )
            )
        return found


def evidence_compare(
    snapshot: Mapping[str, Any], *, body: str | None, explanation: Mapping[str, Any] | None
) -> EvidenceCheck:
    """Compare the message body and the explanation row (a mapping of EXPLANATION_COMPARED_FIELDS
    and `words`, None when the row is gone) with what `snapshot` recorded at decision time. The
    words are compared only where the snapshot holds their digest (records written before it
    did say NOT_RECORDED, never MATCHES)."""
    recorded_body = (snapshot.get("message") or {}).get("body_sha256")
    if body is None:
        body_state = Comparison.MISSING
    elif not recorded_body:
        body_state = Comparison.NOT_RECORDED
    else:
        body_state = Comparison.MATCHES if body_digest(body) == recorded_body else Comparison.DIFFERS

    shown = snapshot.get("explanation")
    if not shown:
        return EvidenceCheck(body_state, Comparison.NOT_RECORDED, Comparison.NOT_RECORDED)
    if explanation is None:
        return EvidenceCheck(body_state, Comparison.MISSING, Comparison.MISSING)
    changed = tuple(
        name
        for name in EXPLANATION_COMPARED_FIELDS
        if name in shown and canonical_json(shown[name]) != canonical_json(explanation.get(name))
    )
    explanation_state = Comparison.DIFFERS if changed else Comparison.MATCHES
    recorded_words = shown.get("words_sha256")
    if not recorded_words:
        words_state = Comparison.NOT_RECORDED
    elif words_digest(explanation.get("words")) == recorded_words:
        words_state = Comparison.MATCHES
    else:
        words_state = Comparison.DIFFERS
    return EvidenceCheck(body_state, explanation_state, words_state, changed)


# --- The whole audit ---------------------------------------------------------------------------------

FINDINGS_KEPT_PER_KIND = 20


@dataclass
class AuditReport:
    """The chain walk, the checkpoints and the evidence checks together. `intact` only when no
    finding of any kind was made."""

    chain: ChainReport
    findings: list[Finding]
    omitted: dict[FindingKind, int]
    log: CheckpointLog
    evidence_checked: bool = True
    evidence_compared: int = 0
    words_not_recorded: int = 0

    @property
    def intact(self) -> bool:
        return not self.findings

    @property
    def count(self) -> int:
        return self.chain.count

    @property
    def head_hash(self) -> str:
        return self.chain.head_hash

    @property
    def broken(self):
        return self.chain.broken

    @property
    def latest_checkpoint(self) -> Checkpoint | None:
        return self.log.latest

    def summary(self) -> str:
        if self.intact:
            return self.chain.summary()
        total = len(self.findings) + sum(self.omitted.values())
        kinds = ", ".join(sorted({f.kind.value for f in self.findings}))
        head = self.chain.summary() if not self.chain.intact else f"{self.chain.count} records link up"
        return f"NOT INTACT ({head}); {total} finding{'s' if total != 1 else ''}: {kinds}"


def findings_capped(findings: Iterable[Finding]) -> tuple[list[Finding], dict[FindingKind, int]]:
    """At most FINDINGS_KEPT_PER_KIND findings of each kind (the first ones), and how many more."""
    kept: list[Finding] = []
    per_kind: dict[FindingKind, int] = {}
    omitted: dict[FindingKind, int] = {}
    for finding in findings:
        seen = per_kind.get(finding.kind, 0)
        if seen < FINDINGS_KEPT_PER_KIND:
            kept.append(finding)
        else:
            omitted[finding.kind] = omitted.get(finding.kind, 0) + 1
        per_kind[finding.kind] = seen + 1
    return kept, omitted
