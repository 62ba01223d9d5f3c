"""Compare two model versions where it matters: the corpus test split, the novel-phrasing slice,
drift phrasings no version was trained on (unless reviewers' labels taught them), and recent
reviewed traffic, where the reviewers' standing decisions are the reference.

Each version is judged at its own threshold. The messages on which the two disagree are
listed so that a person can read them, not just count them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from scoring import classifier
from scoring.classifier.metrics import NOVEL, summarize
from scoring.constants import NO_CLAIM
from scoring.models import Message, ModelVersion, Prediction

ScorerFor = Callable[[ModelVersion], Any]
DRIFT_SEED = 4242
DISAGREEMENT_LIMIT = 50


def scored(rows: Sequence[dict], version: ModelVersion, scorer_for: ScorerFor) -> list[dict]:
    """`rows` with this version's score, predicted type and flag (at its own threshold)."""
    results = scorer_for(version).score([row["body"] for row in rows])
    return [
        {**row, "score": r.score, "predicted_type": r.claim_type, "flagged": r.score >= version.threshold}
        for row, r in zip(rows, results, strict=True)
    ]


def _summary(rows: list[dict], version: ModelVersion) -> dict:
    return summarize(rows, version.threshold) if rows else {"overall": {"n": 0}}


def _disagreements(label: str, a: list[dict], b: list[dict], names: tuple[str, str]) -> list[dict]:
    out = []
    for row_a, row_b in zip(a, b, strict=True):
        if row_a["flagged"] == row_b["flagged"]:
            continue
        out.append(
            {
                "set": label,
                "id": row_a.get("id"),
                "body": row_a["body"][:400],
                "label": row_a["label"],
                "claim_type": row_a["claim_type"],
                names[0]: {"score": round(row_a["score"], 4), "flagged": row_a["flagged"]},
                names[1]: {"score": round(row_b["score"], 4), "flagged": row_b["flagged"]},
                "right": names[0] if row_a["flagged"] == bool(row_a["label"]) else names[1],
            }
        )
    return out


def corpus_sets(corpus_rows: Sequence[dict], *, drift_n: int) -> dict[str, list[dict]]:
    """The labelled sets both versions are scored on."""
    from scoring.constants import CLAIM_TYPE_CODES
    from scoring.corpus.generator import generate_drift_messages

    test = [r for r in corpus_rows if r["split"] == "test"]
    sets = {
        "test_in_distribution": [r for r in test if NOVEL not in r["slices"]],
        "novel_phrasing": [r for r in test if NOVEL in r["slices"]],
    }
    if drift_n:
        sets["drift_phrasings"] = generate_drift_messages(
            seed=DRIFT_SEED, n=drift_n, claim_types=CLAIM_TYPE_CODES
        )
    return sets


def reviewed_rows(
    versions: Sequence[ModelVersion], *, since: datetime | None
) -> tuple[list[dict], dict[int, dict]]:
    """Decided messages (their standing decisions; escalated messages and those waiting for a
    second reviewer left out: `FinalDecision.is_final`) with each version's stored
    prediction; a version that has no prediction for a message gets None (scored later)."""
    from reviews.models import Verdict
    from reviews.training_data import final_decisions

    rows = []
    for decision in final_decisions(since=since):
        if not decision.is_final:
            continue
        is_claim = decision.verdict == Verdict.CLAIM
        rows.append(
            {
                "id": decision.message_id,
                "body": decision.body,
                "label": int(is_claim),
                "claim_type": (decision.claim_type or NO_CLAIM) if is_claim else NO_CLAIM,
                "slices": [],
            }
        )
    stored: dict[int, dict] = {}
    predictions = Prediction.objects.filter(
        message_id__in=[r["id"] for r in rows], model_version__in=list(versions)
    ).values_list("message_id", "model_version_id", "score", "claim_type__code")
    for message_id, version_id, score, code in predictions:
        stored.setdefault(version_id, {})[message_id] = {"score": score, "predicted_type": code}
    return rows, stored


def _reviewed_for(
    version: ModelVersion, rows: list[dict], stored: dict, scorer_for: ScorerFor
) -> tuple[list, int]:
    have = stored.get(version.pk, {})
    missing = [r for r in rows if r["id"] not in have]
    fresh = {r["id"]: r for r in scored(missing, version, scorer_for)} if missing else {}
    out = []
    for row in rows:
        prediction = have.get(row["id"]) or fresh[row["id"]]
        score = prediction["score"]
        out.append({**row, **prediction, "flagged": score >= version.threshold})
    return out, len(missing)


def compare_versions(
    *,
    baseline: ModelVersion,
    candidate: ModelVersion,
    corpus_rows: Sequence[dict],
    since: datetime | None = None,
    drift_n: int = 200,
    scorer_for: ScorerFor = classifier.scorer_for,
) -> dict[str, Any]:
    """Every figure of the comparison, JSON-ready."""
    names = (baseline.name, candidate.name)
    result: dict[str, Any] = {
        "baseline": {"name": baseline.name, "threshold": baseline.threshold},
        "candidate": {"name": candidate.name, "threshold": candidate.threshold},
        "sets": {},
        "disagreements": {},
        "disagreement_counts": {},
    }

    def record(label: str, a: list[dict], b: list[dict]) -> list[dict]:
        result["sets"][label] = {names[0]: _summary(a, baseline), names[1]: _summary(b, candidate)}
        found = _disagreements(label, a, b, names)
        result["disagreement_counts"][label] = len(found)
        result["disagreements"][label] = found[:DISAGREEMENT_LIMIT]
        return result["disagreements"][label]

    for label, rows in corpus_sets(corpus_rows, drift_n=drift_n).items():
        record(label, scored(rows, baseline, scorer_for), scored(rows, candidate, scorer_for))
    reviewed, stored = reviewed_rows([baseline, candidate], since=since)
    a, scored_now_a = _reviewed_for(baseline, reviewed, stored, scorer_for)
    b, scored_now_b = _reviewed_for(candidate, reviewed, stored, scorer_for)
    result["reviewed_traffic"] = {
        "messages": len(reviewed),
        "since": since.isoformat() if since else None,
        "scored_now": {names[0]: scored_now_a, names[1]: scored_now_b},
    }
    listed = record("reviewed_traffic", a, b)
    external = dict(Message.objects.filter(id__in=[d["id"] for d in listed]).values_list("id", "external_id"))
    for item in listed:
        item["external_id"] = external.get(item["id"])
    return result
