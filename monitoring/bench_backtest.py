"""The backtest timing of `bench_rules --backtest N`: N stored messages are seeded (with their
routing predictions) inside a transaction that is rolled back at the end, so the benchmark leaves
nothing behind, and the backtest of a draft against the active rules is timed on them.

Two drafts: "few" (what an edit usually is: one rule added, one context rule added, one rule
dropped) and "all" (every rule's context window changed: the prefilter spares few of these bodies,
so it times the matching itself, with the anchors and what the two sides share). Six of the
seeded rules have no context terms, so their window edit cannot change a hit and the scan treats
them as unchanged (scoring.backtest.rule_diff); the nine context rules are matched on both sides."""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import replace
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from scoring.constants import CLASS_LABELS, MessageStatus, RouteReason
from scoring.models import ClaimType, Message, ModelVersion, Prediction
from scoring.rules import RuleSpec

SEED_BATCH = 5_000
# Office prose with the words the rules look for in innocent contexts (the expensive case for the
# matcher: many candidate matches that the guards must reject); bench_rules reads it too.
RULE_WORDS_PROSE = (
    "Please find the quarterly letter attached.",
    "Guaranteed delivery within three days on every order.",
    "Our returns policy allows thirty days.",
    "Start your risk-free 30-day trial today.",
    "The SEC filing is attached for your records.",
    "Past performance is no guarantee of future returns.",
    "The team will double in size next year.",
    "No risk assessment was needed for the office move.",
)
# Sentences of the seeded bodies: that prose, some claims, and the phrases the "few" draft's new
# rules match.
PROSE = [
    *RULE_WORDS_PROSE,
    "Let me know if you have questions about the portfolio review.",
    "The meeting moved to Thursday at ten.",
]
CLAIMS = [
    "Your returns are guaranteed.",
    "This is a risk-free investment.",
    "This stock will double by March.",
    "The SEC approved this fund.",
    "This coin is going to the moon.",
    "Your principal is bulletproof with us.",
]
LENGTHS = (150, 300, 600, 1200, 2400)  # characters, drawn uniformly: a mix of chat and mail
# Share of claim sentences: about 7 % of the messages hold a claim (the simulated traffic's 8 %),
# and 2.5 % one of the phrases the "few" draft's new rules match (a new euphemism's share).
CLAIM_SENTENCES = 0.004


def _body(rng: random.Random) -> str:
    size, parts, total = rng.choice(LENGTHS), [], 0
    while total < size:
        sentence = rng.choice(CLAIMS) if rng.random() < CLAIM_SENTENCES else rng.choice(PROSE)
        parts.append(sentence)
        total += len(sentence) + 1
    return " ".join(parts)


def seed(n: int, *, seed_value: int = 0, days: int = 30, now=None) -> int:
    """Seed `n` scored messages received in the `days` days before `now`; returns the first id."""
    rng = random.Random(seed_value)
    version = ModelVersion.objects.create(
        name=f"bench-backtest-{timezone.now():%Y%m%d%H%M%S%f}",
        base_model="bench",
        artifact_path="/nonexistent",
        artifact_sha256="0" * 64,
        corpus_sha256="0" * 64,
        labels=list(CLASS_LABELS),
        threshold=0.5,
        threshold_rule="bench",
    )
    claim_type = ClaimType.objects.order_by("position").first()
    now = now or timezone.now()
    run = f"{now:%H%M%S%f}"
    first: int | None = None
    for start in range(0, n, SEED_BATCH):
        size = min(SEED_BATCH, n - start)
        messages = []
        for i in range(start, start + size):
            body = _body(rng)
            flagged = rng.random() < 0.08
            messages.append(
                Message(
                    external_id=f"bench-bt-{run}-{i}",
                    body=body,
                    body_sha256=hashlib.sha256(body.encode()).hexdigest(),
                    received_at=now - timedelta(seconds=rng.uniform(60, days * 86_400 - 60)),
                    status=MessageStatus.IN_REVIEW if flagged else MessageStatus.CLEARED,
                    route_reason=RouteReason.MODEL_FLAG if flagged else RouteReason.CLEARED,
                    queue_score=0.9 if flagged else 0.1,
                )
            )
        created = Message.objects.bulk_create(messages, batch_size=1_000)  # pks set (RETURNING)
        ids = [(m.pk, m.queue_score) for m in created]
        first = min(ids)[0] if first is None else first
        Prediction.objects.bulk_create(
            [
                Prediction(
                    message_id=message_id,
                    model_version=version,
                    score=score,
                    claim_type=claim_type,
                    probabilities={},
                    threshold=0.5,
                    flagged=score >= 0.5,
                    latency_ms=1.0,
                )
                for message_id, score in ids
            ],
            batch_size=1_000,
        )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE scoring_message SET routing_prediction_id = (SELECT p.id FROM scoring_prediction p "
            "WHERE p.message_id = scoring_message.id) WHERE id >= %s AND external_id LIKE %s",
            [first, f"bench-bt-{run}-%"],
        )
    return first


def drafts(active: list[RuleSpec]) -> dict[str, list[RuleSpec]]:
    """The two drafts (module docstring) as engine specs."""
    few = [s for s in active if s.code != "GR-004"] + [
        RuleSpec(-1, "PF-900", 0, "performance_forecast", r"\bto\s+the\s+moon\b"),
        RuleSpec(-2, "RF-900", 0, "risk_free", r"\bbulletproof\b", context_terms=("principal", "capital")),
    ]
    every = [replace(s, context_window=s.context_window + 1, rule_set_version=0) for s in active]
    return {"few": few, "all": every}


def bench_backtest(n: int, *, which: tuple[str, ...] = ("few", "all"), days: int = 30) -> dict:
    """Seed, time each draft's backtest, roll everything back. Figures per draft."""
    from monitoring.backtest import backtest_compute, set_specs
    from scoring.selectors import active_rule_set

    report: dict = {"messages": n}
    with transaction.atomic():
        started, seeded_at = time.perf_counter(), timezone.now()
        seed(n, days=days, now=seeded_at)
        report["seed_seconds"] = round(time.perf_counter() - started, 1)
        active = set_specs(active_rule_set())
        # The window starts where the seeding's did: seeding a million messages takes minutes, and
        # a window slid by that much would leave the oldest seeded messages out of the scan.
        since, until = seeded_at - timedelta(days=days), timezone.now()
        for name in which:
            started = time.perf_counter()
            result = backtest_compute(active=active, draft=drafts(active)[name], since=since, until=until)
            seconds = time.perf_counter() - started
            report[f"draft_{name}"] = {
                "seconds": round(seconds, 2),
                "messages_per_s": round(result["messages"] / seconds),
                "scanned": result["messages"],
                "candidates": result["scan"]["candidates"],
                "added": result["added"]["messages"],
                "removed": result["removed"]["messages"],
                "seconds_per_million": round(seconds * 1_000_000 / max(result["messages"], 1), 1),
            }
        transaction.set_rollback(True)
    return report
