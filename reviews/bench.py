"""Seeding and timing for `manage.py bench_web` (PostgreSQL only).

The command seeds into a schema of its own (migrated from scratch, dropped at the end), so the
real tables are never touched. The hash chain of the seeded decisions is computed with
reviews.hashing.record_hash, as the decision service does, in bulk.
"""

from __future__ import annotations

import hashlib
import random
import secrets
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import connection
from django.utils import timezone
from tqdm import tqdm

from core.roles import Role
from explanations.models import Explanation, ExplanationMethod
from reviews.hashing import GENESIS_HASH, record_hash
from reviews.models import ReviewDecision, Verdict
from reviews.selectors import snapshot_build
from reviews.services import decision_agreement
from scoring.constants import CLASS_LABELS, MessageStatus
from scoring.models import ClaimType, Message, ModelVersion, Prediction, Rule, RuleMatch, RuleSet

BATCH = 5_000
BENCH_CHECK_RULE = "bench: comprehensiveness >= 0.10 and >= 2x random"
PHRASES = {
    "guaranteed_returns": "guaranteed returns",
    "risk_free": "completely risk-free",
    "performance_forecast": "will double by March",
    "regulatory_endorsement": "approved by the SEC",
}
FILLER_TEXT = (
    "Thanks for the call today. As discussed, please find the quarterly letter attached and let me "
    "know a good time to go through the allocation. Our team is available all week."
)
FILLER = FILLER_TEXT.split(" ")


@dataclass
class Seeded:
    """What the timing phase needs to know about the seeded rows."""

    tag: str
    reviewers: list[User]
    auditor: User
    in_review_ids: list[int]
    claim_types: list[ClaimType]
    versions: list[ModelVersion]
    first_day: Any
    last_day: Any


def _chunks(items: list[Any], size: int = BATCH) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _bulk(model: type, rows: list[Any], desc: str) -> list[Any]:
    created: list[Any] = []
    for chunk in tqdm(list(_chunks(rows)), desc=desc, unit="batch", leave=False):
        created.extend(model.objects.bulk_create(chunk))
    return created


def _body(rng: random.Random, phrase: str | None) -> tuple[str, int | None]:
    words = rng.sample(FILLER, k=min(len(FILLER), rng.randint(14, 26)))
    if phrase is None:
        return " ".join(words).capitalize() + ".", None
    cut = rng.randint(3, len(words) - 3)
    head = " ".join(words[:cut]).capitalize() + ", our fund offers "
    return head + phrase + " " + " ".join(words[cut:]) + ".", len(head)


def _words(body: str, phrase_start: int | None, phrase: str | None) -> list[dict[str, Any]]:
    words, position = [], 0
    for word in body.split(" "):
        hot = phrase_start is not None and phrase_start <= position < phrase_start + len(phrase or "")
        words.append(
            {"word": word, "start": position, "end": position + len(word), "score": 0.6 if hot else 0.01}
        )
        position += len(word) + 1
    return words


def seed(*, messages: int, decisions: int, seed_value: int = 0) -> Seeded:
    """Seed `messages` messages (with predictions, rule matches, explanations) of which
    `decisions` carry a decision (3% of them escalations); of the rest 60% wait in review and
    40% were cleared."""
    rng = random.Random(seed_value)
    tag = secrets.token_hex(4)
    now = timezone.now()
    claim_types = list(ClaimType.objects.order_by("position"))
    versions = [
        ModelVersion.objects.create(
            name=f"bench-{tag}-{i}",
            base_model="bench",
            artifact_path="/bench",
            artifact_sha256="0" * 64,
            corpus_sha256="0" * 64,
            labels=list(CLASS_LABELS),
            threshold=0.5,
            threshold_rule="bench",
        )
        for i in range(2)
    ]
    rule_set = RuleSet.objects.create(
        version=(RuleSet.objects.order_by("-version").values_list("version", flat=True).first() or 0) + 1
    )
    rules = {
        ct.code: Rule.objects.create(
            rule_set=rule_set, code=f"B-{ct.position:03d}", claim_type=ct, pattern=PHRASES[ct.code]
        )
        for ct in claim_types
    }
    reviewer_group = Group.objects.get(name=Role.REVIEWER)
    reviewers = []
    for i in range(10):
        user = User.objects.create(username=f"bench-{tag}-reviewer{i}")
        user.groups.add(reviewer_group)
        reviewers.append(user)
    auditor = User.objects.create(username=f"bench-{tag}-auditor")
    auditor.groups.add(Group.objects.get(name=Role.AUDITOR))

    # Messages: the first `decisions` are decided (a few escalated), then ~60% of the rest in
    # review, the remainder cleared.
    plan: list[tuple[str, str | None, float, bool]] = []
    rest = messages - decisions
    for index in range(messages):
        qa = rng.random() < 0.03
        has_claim = rng.random() < 0.55
        code = rng.choice(claim_types).code if has_claim else None
        score = rng.uniform(0.5, 0.999) if has_claim and not qa else rng.uniform(0.01, 0.49)
        if index < decisions:
            status = MessageStatus.ESCALATED if rng.random() < 0.03 else MessageStatus.DECIDED
        elif index < decisions + int(rest * 0.6):
            status = MessageStatus.IN_REVIEW
        else:
            status, score, code, qa = MessageStatus.CLEARED, rng.uniform(0.01, 0.3), None, False
        plan.append((status, code, score, qa))

    message_rows, phrase_starts = [], []
    span_seconds = 90 * 24 * 3600
    for index, (status, code, _score, qa) in enumerate(plan):
        phrase = PHRASES[code] if code and rng.random() < 0.7 else None
        body, start = _body(rng, phrase)
        phrase_starts.append((phrase, start))
        received = now - timedelta(seconds=rng.randint(0, span_seconds))
        message_rows.append(
            Message(
                external_id=f"bench-{tag}-{index:06d}",
                body=body,
                body_sha256=hashlib.sha256(body.encode()).hexdigest(),
                sender="advisor@bench.test",
                channel="email",
                received_at=received,
                status=status,
                is_qa_sample=qa,
                has_rule_hit=phrase is not None,
                route_reason="cleared"
                if status == MessageStatus.CLEARED
                else ("qa_sample" if qa else "model_flag"),
                in_review_at=received if status != MessageStatus.CLEARED else None,
            )
        )
    message_objs = _bulk(Message, message_rows, "messages")
    by_code = {ct.code: ct for ct in claim_types}
    prediction_rows = []
    for message, (_status, code, score, _qa) in zip(message_objs, plan, strict=True):
        ct = by_code[code] if code else rng.choice(claim_types)
        prediction_rows.append(
            Prediction(
                message=message,
                model_version=versions[0] if rng.random() < 0.8 else versions[1],
                score=score,
                claim_type=ct,
                probabilities={"no_claim": 1 - score, ct.code: score},
                window_scores=[{"start": 0, "end": len(message.body), "score": score}],
                threshold=0.5,
                flagged=score >= 0.5,
                latency_ms=3.0,
            )
        )
    predictions = _bulk(Prediction, prediction_rows, "predictions")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE scoring_message m SET routing_prediction_id = p.id, queue_score = p.score "
            "FROM scoring_prediction p WHERE p.message_id = m.id AND m.external_id LIKE %s",
            [f"bench-{tag}-%"],
        )
    match_rows, explanation_rows = [], []
    for message, prediction, (phrase, start) in zip(message_objs, predictions, phrase_starts, strict=True):
        message.routing_prediction = prediction
        if phrase is not None:
            rule = rules[prediction.claim_type.code]
            match_rows.append(
                RuleMatch(
                    message=message,
                    rule=rule,
                    rule_code=rule.code,
                    rule_set_version=rule_set.version,
                    claim_type=rule.claim_type,
                    start=start,
                    end=start + len(phrase),
                    text=phrase,
                )
            )
        if message.status != MessageStatus.CLEARED:
            passed = prediction.score >= 0.5 and phrase is not None
            explanation_rows.append(
                Explanation(
                    message=message,
                    prediction=prediction,
                    model_version_id=prediction.model_version_id,
                    method=ExplanationMethod.INTEGRATED_GRADIENTS,
                    window_end=len(message.body),
                    words=_words(message.body, start, phrase),
                    k=2,
                    score_full=prediction.score,
                    score_without_top=prediction.score * (0.2 if passed else 0.97),
                    comprehensiveness=prediction.score * (0.8 if passed else 0.03),
                    sufficiency=0.05,
                    random_baseline=0.02,
                    flipped=passed,
                    threshold=0.5,
                    passed=passed,
                    pass_rule=BENCH_CHECK_RULE,
                    verdict_text="bench explanation",
                )
            )
    matches = _bulk(RuleMatch, match_rows, "rule matches")
    explanations = _bulk(Explanation, explanation_rows, "explanations")
    matches_by_message: dict[int, list[RuleMatch]] = {}
    for match in matches:
        matches_by_message.setdefault(match.message_id, []).append(match)
    explanation_by_message = {e.message_id: e for e in explanations}

    head = ReviewDecision.objects.order_by("-sequence").values("sequence", "content_hash").first()
    sequence = head["sequence"] if head else 0
    previous = head["content_hash"] if head else GENESIS_HASH
    decided_at = sorted(now - timedelta(seconds=rng.randint(0, span_seconds)) for _ in range(decisions))
    decision_rows = []
    for index in tqdm(range(decisions), desc="decision chain", unit="record", leave=False):
        message, prediction = message_objs[index], predictions[index]
        reviewer = reviewers[index % len(reviewers)]
        if message.status == MessageStatus.ESCALATED:
            verdict, claim_type = Verdict.ESCALATE, None
        elif rng.random() < 0.6:
            verdict = Verdict.CLAIM
            claim_type = prediction.claim_type if rng.random() < 0.85 else rng.choice(claim_types)
        else:
            verdict, claim_type = Verdict.NO_CLAIM, None
        agrees, type_matches = decision_agreement(
            verdict=verdict,
            model_flagged=prediction.flagged,
            claim_type_id=claim_type.pk if claim_type else None,
            model_claim_type_id=prediction.claim_type_id,
        )
        sequence += 1
        decision = ReviewDecision(
            sequence=sequence,
            previous_hash=previous,
            message=message,
            reviewer=reviewer,
            verdict=verdict.value,
            claim_type=claim_type,
            note=rng.choice(["", "", "Clear promise of returns.", "Context makes it a disclaimer."]),
            escalation_reason="Unsure, needs a second look." if verdict == Verdict.ESCALATE else "",
            snapshot=snapshot_build(
                message=message,
                prediction=prediction,
                rule_matches=matches_by_message.get(message.pk, []),
                explanation=explanation_by_message.get(message.pk),
                reviewer=reviewer,
                claim_type=claim_type,
            ),
            model_version_id=prediction.model_version_id,
            model_score=prediction.score,
            model_threshold=prediction.threshold,
            model_flagged=prediction.flagged,
            model_claim_type_id=prediction.claim_type_id,
            is_qa_sample=message.is_qa_sample,
            agrees_with_model=agrees,
            claim_type_matches=type_matches,
            created_at=decided_at[index],
        )
        decision.snapshot["message"]["status"] = MessageStatus.IN_REVIEW  # as the service sees it
        decision.content_hash = record_hash(decision)
        previous = decision.content_hash
        decision_rows.append(decision)
    _bulk(ReviewDecision, decision_rows, "decisions")
    with connection.cursor() as cursor:
        for table in (
            "scoring_message",
            "scoring_prediction",
            "scoring_rulematch",
            "explanations_explanation",
            "reviews_reviewdecision",
        ):
            cursor.execute(f"ANALYZE {table}")
    in_review = [m.pk for m in message_objs if m.status == MessageStatus.IN_REVIEW]
    return Seeded(
        tag=tag,
        reviewers=reviewers,
        auditor=auditor,
        in_review_ids=in_review,
        claim_types=claim_types,
        versions=versions,
        first_day=(now - timedelta(days=90)).date(),
        last_day=now.date(),
    )


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile of the samples (q in 0..100)."""
    ordered = sorted(samples)
    rank = max(1, round(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def timed(requests: int, call: Callable[[int], Any], desc: str, warmup: int = 5) -> list[float]:
    """Milliseconds of `call(i)` for i in range(requests), after `warmup` untimed calls."""
    for i in range(warmup):
        call(i)
    samples = []
    for i in tqdm(range(requests), desc=desc, unit="req", leave=False):
        started = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(samples), 2),
        "p95": round(percentile(samples, 95), 2),
        "max": round(max(samples), 2),
    }
