"""Evaluation beyond the corpus: hand-written sets, the system's routing decision, calibration.

Pure (no Django). The corpus test split says how the model does on the generator's held-out
families; the hand-written sets (scoring/corpus/handwritten/, see the DATASHEET) say how the
system does on text nobody templated, which is what a compliance team lives with:

- `routed` is what the pipeline does: the model flags it (score >= threshold) OR a rule hits in
  a part of the message that routes (scoring.segmentation); a hand-written claim that is routed
  reaches a reviewer, an innocent one that is routed is a reviewer's wasted time;
- every figure is given overall, per claim type and per `kind` (reply_quote, long_email, ...);
- calibration: expected calibration error (ECE) of the claim score over ECE_BINS equal-width
  bins, and the reliability table behind it (mean score vs share of claims per bin).

A hand-written row: {"id", "body", "label", "claim_type", "kind", ...} (see the datasheet).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from scoring.classifier.metrics import binary_counts
from scoring.corpus.jsonl import read_jsonl
from scoring.corpus.schema import CorpusError
from scoring.routing import routing_rule_hits
from scoring.rules import CompiledRules

ECE_BINS = 10
HANDWRITTEN_KEYS = ("id", "body", "label", "claim_type", "kind")
# The hand-written kind whose innocent messages are the hard negatives: claim words in innocent
# context, advisers refusing to promise, historical returns with their disclaimer.
HARD_NEGATIVE_KIND = "innocent_context"


class EvaluationSetError(ValueError):
    """A hand-written evaluation file that cannot be read; the message names the line."""


def read_handwritten(path: str | Path) -> list[dict]:
    """The rows of a hand-written set (JSONL), checked for the keys evaluation needs."""
    try:
        rows = read_jsonl(path, validate=False)
    except CorpusError as exc:
        raise EvaluationSetError(str(exc)) from exc
    for number, row in enumerate(rows, start=1):
        if (
            not isinstance(row, dict)
            or any(key not in row for key in HANDWRITTEN_KEYS)
            or row["label"] not in (0, 1)
        ):
            raise EvaluationSetError(
                f"{path}: row {number} needs {', '.join(HANDWRITTEN_KEYS)}, label 0 or 1"
            )
    if not rows:
        raise EvaluationSetError(f"{path} has no rows")
    return rows


def score_rows(
    scorer, rows: Sequence[dict], *, threshold: float, rules: CompiledRules | None = None
) -> list[dict]:
    """Each row with its score, predicted type, model flag, rule hit and routing decision."""
    results = scorer.score([row["body"] for row in rows]) if rows else []
    scored = []
    for row, result in zip(rows, results, strict=True):
        hits = routing_rule_hits(row["body"], rules, segmented=getattr(scorer, "segmented", False))
        flagged = result.score >= threshold
        scored.append(
            {
                "id": row["id"],
                "label": row["label"],
                "claim_type": row["claim_type"],
                "kind": row.get("kind", "corpus"),
                "slices": row.get("slices", []),
                "score": result.score,
                "predicted_type": result.claim_type,
                "flagged": flagged,
                "rule_hit": bool(hits),
                "rule_codes": sorted({h.code for h in hits}),
                "routed": flagged or bool(hits),
            }
        )
    return scored


def _decision_counts(rows: Sequence[dict], key: str) -> dict:
    # binary_counts decides by score >= threshold: put the decision in as the score.
    return binary_counts([{"label": r["label"], "score": 1.0 if r[key] else 0.0} for r in rows], 0.5)


def summarize_decisions(rows: Sequence[dict]) -> dict:
    """Counts and rates of the model flag and of the routing decision, overall, per claim type
    (recall of its claims) and per kind (recall on its claims, false-positive rate on its
    innocent messages)."""
    out: dict = {"n": len(rows)}
    for key in ("flagged", "routed"):
        per_type = {}
        for code in sorted({r["claim_type"] for r in rows if r["label"] == 1}):
            claims = [r for r in rows if r["label"] == 1 and r["claim_type"] == code]
            caught = sum(1 for r in claims if r[key])
            per_type[code] = {"claims": len(claims), "caught": caught, "recall": caught / len(claims)}
        per_kind = {
            kind: _decision_counts([r for r in rows if r["kind"] == kind], key) for kind in _kinds(rows)
        }
        out[key] = {"overall": _decision_counts(rows, key), "per_claim_type": per_type, "per_kind": per_kind}
    return out


def hard_negative_rate(rows: Sequence[dict], key: str = "routed") -> float | None:
    """The share of the hard negatives (innocent rows of HARD_NEGATIVE_KIND) that `key` sends on."""
    hard = [r for r in rows if r["label"] == 0 and r["kind"] == HARD_NEGATIVE_KIND]
    return sum(1 for r in hard if r[key]) / len(hard) if hard else None


def _kinds(rows: Sequence[dict]) -> list[str]:
    return sorted({r["kind"] for r in rows})


def reliability(scores: Sequence[float], labels: Sequence[int], *, bins: int = ECE_BINS) -> dict:
    """Expected calibration error of claim scores against labels (equal-width bins, weighted by
    their counts) and the reliability table: per bin its range, count, mean score and the share
    of claims."""
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    if not scores:
        return {"ece": None, "bins": [], "n": 0}
    table = []
    ece = 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        members = [
            (s, y)
            for s, y in zip(scores, labels, strict=True)
            if low <= s < high or (b == bins - 1 and s == 1.0)
        ]
        if not members:
            table.append({"low": low, "high": high, "n": 0, "mean_score": None, "claim_share": None})
            continue
        mean_score = sum(s for s, _ in members) / len(members)
        share = sum(y for _, y in members) / len(members)
        ece += len(members) / len(scores) * abs(mean_score - share)
        table.append(
            {"low": low, "high": high, "n": len(members), "mean_score": mean_score, "claim_share": share}
        )
    return {"ece": ece, "bins": table, "n": len(scores)}
