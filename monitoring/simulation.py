"""Simulated traffic through the real pipeline, for the monitoring page to show something true.

Per simulated day: ordinary messages (scoring.corpus generate_traffic_messages) and, from the
drift day, claims in a style the model never saw (obfuscated spellings in look-alike letters:
generate_drift_messages) are ingested with `messages_ingest_bulk` (received_at inside that day), scored by
`messages_score_batch` with the active model, explained by `messages_explain_batch`, and the
messages that reach the review queue are claimed (`lock_claim`) and decided (`decision_record`)
by simulated reviewer accounts who know each message's true label and err at a small rate.

It runs in this process, through the same services the Celery workers call, not through the
broker: the QA sample rate of the run is this process's setting, and while it runs the services'
after-commit publishes go to an in-memory transport, so workers of a running site do not race
it with their own settings. Decisions are recorded at simulated times (decision_record's
`decided_at`), in time order, so the audit chain stays valid; a decision whose time is still in
the future when the run ends leaves its message waiting in the queue.

Volume and QA sample rate, and why. Misses are only visible through the QA sample, and only
the share of drift claims the model misses shows up as disagreement. A well-trained real model
(MiniLM fine-tuned on the corpus) still catches about 75 % of the performance_forecast drift
phrasings and 93-100 % of the others, so by default the simulation drifts performance_forecast,
at 8 claims a day on 60 ordinary messages (8 % of them claims, ~1.2 a claim type a day), and
reviews every message below the threshold (QA rate 1.0; the product default is 0.02). Then the
drifted type's disagreement goes from ~2 % (reviewer errors) to ~20 %, and its reference - the
first MONITORING_REFERENCE_DAYS after activation, extended to 30 reviewed messages, which takes
~25 days at 1.2 a day - is tight enough for the alert rule to see it by week. At a QA rate of 0.5
the observed rate would only reach ~12 %, inside the intervals. Cost: every flagged message is
explained (IG + occlusion, ~1-4 s each on a CPU): ~480 of them in the default 60-day run.
Simulated reviewers err at 0.5 %: with every below-threshold message reviewed, a 2 % error rate
turns ~1 neutral message a day into a "claim" of a random type, which alone puts every claim
type's disagreement near 20 % (measured: 13-25 % before the drift day, seed 7).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test.utils import override_settings
from django.utils import timezone

from core.roles import Role
from monitoring.demo_sources import DemoRow, DemoWriter
from monitoring.errors import SimulationError
from reviews.models import ReviewDecision
from scoring.constants import CLAIM_TYPE_CODES, MessageStatus
from scoring.models import ClaimType, Message, ModelVersion

SIM_REVIEWER_PREFIX = "sim_reviewer_"
REVIEW_DELAY_HOURS = (0.5, 20.0)


@dataclass(frozen=True)
class SimulationConfig:
    days: int = 60
    drift_day: int = 30
    reviewers: int = 3
    per_day: int = 60
    drift_per_day: int = 8
    drift_types: tuple[str, ...] = ("performance_forecast",)
    claim_rate: float = 0.08
    qa_rate: float = 1.0
    error_rate: float = 0.005
    seed: int = 7
    # Deliver the traffic as production does: each day an mbox, a Slack export and an SMS
    # transcript (monitoring.demo_sources) read by the importers (scoring.services.sources).
    via_sources: bool = False
    # Leave the last simulated day's routed messages in the review queue, for a person to try.
    leave_last_day: bool = False

    def validate(self) -> None:
        problems = []
        if self.days < 2:
            problems.append("--days must be at least 2")
        if not 1 <= self.drift_day <= self.days:
            problems.append(f"--drift-day must be within 1..{self.days} (day 0 is the first simulated day)")
        if self.reviewers < 1:
            problems.append("--reviewers must be at least 1")
        if self.per_day < 1:
            problems.append("--per-day must be at least 1")
        if self.drift_per_day < 0:
            problems.append("--drift-per-day must be >= 0")
        if not self.drift_types or any(code not in CLAIM_TYPE_CODES for code in self.drift_types):
            problems.append(f"--drift-types must name some of {', '.join(CLAIM_TYPE_CODES)}")
        for name in ("claim_rate", "qa_rate", "error_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                problems.append(f"--{name.replace('_', '-')} must be within [0, 1]")
        if problems:
            raise SimulationError("; ".join(problems))


DEMO = SimulationConfig(
    days=14,
    drift_day=7,
    per_day=40,
    drift_per_day=8,
    drift_types=("risk_free",),
    qa_rate=0.5,
    via_sources=True,
    leave_last_day=True,
)


@dataclass
class SimulationReport:
    """What a run did, for the command's output (and --json)."""

    run: str
    model_version: str
    first_day: str
    last_day: str
    drift_day: str
    qa_rate: float
    messages: int = 0
    drift_messages: int = 0
    flagged: int = 0
    rule_hits: int = 0
    qa_samples: int = 0
    explained: int = 0
    shadow_scored: int = 0
    decided: int = 0
    second_reviews: int = 0  # decisions drawn for a blind second review (both are in `decided`)
    decision_errors: int = 0
    left_in_queue: int = 0
    seconds: dict[str, float] = field(
        default_factory=lambda: {"ingest": 0.0, "score": 0.0, "explain": 0.0, "review": 0.0}
    )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def _in_process_broker() -> Iterator[None]:
    """Point this process's Celery app at an in-memory transport for the duration."""
    from compliance_site.celery import app

    keys = ("broker_url", "broker_read_url", "broker_write_url", "broker_transport_options")
    saved = {key: app.conf[key] for key in keys}

    def reset() -> None:
        # Drop (do not close) the cached pools; the next publish builds them for the new URL.
        app._pool = None
        app.amqp._producer_pool = None

    reset()
    app.conf.update(
        broker_url="memory://",
        broker_read_url="memory://",
        broker_write_url="memory://",
        broker_transport_options={},
    )
    try:
        yield
    finally:
        reset()
        app.conf.update(saved)


def _explain_service() -> Callable[..., Any]:
    try:
        from explanations.services import messages_explain_batch
    except ImportError as exc:
        raise SimulationError(
            "The explanation service (explanations.services.messages_explain_batch) is not available in "
            "this build, so flagged messages cannot be explained; nothing was simulated."
        ) from exc
    return messages_explain_batch


def _reviewers(count: int) -> list[User]:
    group = Group.objects.get(name=Role.REVIEWER.value)
    users = []
    for i in range(1, count + 1):
        user, created = User.objects.get_or_create(username=f"{SIM_REVIEWER_PREFIX}{i}")
        if created:
            user.set_unusable_password()  # simulated people never sign in
            user.save()
        user.groups.add(group)
        users.append(user)
    return users


def _days(config: SimulationConfig, today: date) -> list[date]:
    """The simulated days: `days` days ending yesterday (UTC), so nothing is received in the future."""
    first = today - timedelta(days=config.days)
    return [first + timedelta(days=i) for i in range(config.days)]


def _check_preconditions(config: SimulationConfig, first_day: date) -> ModelVersion:
    version = ModelVersion.objects.filter(is_active=True).first()
    if version is None:
        raise SimulationError("No model version is active: run `python manage.py ensure_model` first.")
    head = ReviewDecision.objects.order_by("-sequence").values_list("created_at", flat=True).first()
    start = datetime.combine(first_day, datetime.min.time(), tzinfo=UTC)
    if head is not None and head > start:
        raise SimulationError(
            f"The audit chain already holds decisions up to {head:%Y-%m-%d %H:%M} UTC, after the first "
            f"simulated day {first_day}: simulated decisions would break its time order. Simulate fewer days "
            "or use an empty database."
        )
    return version


@dataclass
class _Pending:
    due: datetime
    message_id: int
    label: int
    claim_type: str
    received_at: datetime
    # Set for a blind second review (reviews.double_review): who decided first, and may not again.
    first_reviewer_id: int | None = None


def _verdict(rng: random.Random, item: _Pending, error_rate: float) -> tuple[str, str | None]:
    """The simulated reviewer's decision: the true label, wrong with probability error_rate."""
    claim = item.label == 1
    if rng.random() < error_rate:
        claim = not claim
        code = rng.choice(CLAIM_TYPE_CODES) if claim else None
        return ("claim", code) if claim else ("no_claim", None)
    return ("claim", item.claim_type) if claim else ("no_claim", None)


def simulate(
    config: SimulationConfig,
    *,
    progress: Callable[[Sequence, str], Any] | None = None,
    today: date | None = None,
) -> SimulationReport:
    """Run the simulation (see the module docstring). Raises SimulationError, before writing
    anything, when the configuration or the database does not allow it."""
    from monitoring.services import rollup_refresh
    from reviews.errors import ReviewError
    from reviews.services import decision_record, lock_claim
    from reviews.tasks import audit_checkpoint
    from scoring.corpus.generator import generate_drift_messages, generate_traffic_messages
    from scoring.services.ingest import IncomingMessage, messages_ingest_bulk
    from scoring.services.pipeline import messages_score_batch
    from scoring.services.shadow import messages_shadow_score
    from scoring.services.sources import mail_limits, sources_import
    from scoring.sources.chat import read_chat_jsonl
    from scoring.sources.mailboxes import read_mbox
    from scoring.sources.slack import read_slack_export

    config.validate()
    today = today or timezone.now().date()
    days = _days(config, today)
    version = _check_preconditions(config, days[0])
    explain = _explain_service()
    progress = progress or (lambda items, _label: items)
    rng = random.Random(f"simulate:{config.seed}")
    second_rng = random.Random(f"simulate-second-review:{config.seed}")
    run = timezone.now().strftime("%Y%m%d%H%M%S")
    report = SimulationReport(
        run=run,
        model_version=version.name,
        first_day=days[0].isoformat(),
        last_day=days[-1].isoformat(),
        drift_day=days[config.drift_day].isoformat() if config.drift_day < config.days else "none",
        qa_rate=config.qa_rate,
    )
    traffic = generate_traffic_messages(
        seed=config.seed, n=config.days * config.per_day, claim_rate=config.claim_rate
    )
    drift_days = config.days - config.drift_day
    drift = generate_drift_messages(
        seed=config.seed, n=drift_days * config.drift_per_day, claim_types=list(config.drift_types)
    )
    reviewers = _reviewers(config.reviewers)
    claim_types = {ct.code: ct for ct in ClaimType.objects.all()}
    labels: dict[str, tuple[int, str]] = {}
    pending: list[_Pending] = []
    last_decision = datetime.combine(days[0], datetime.min.time(), tzinfo=UTC)

    last_day_start = datetime.combine(days[-1], datetime.min.time(), tzinfo=UTC)
    kept: list[_Pending] = []  # the last day's routed messages, left for a person (leave_last_day)
    writer = DemoWriter(seed=config.seed) if config.via_sources else None
    folder = Path(settings.VAR_DIR) / "demo" / run

    def review_until(until: datetime) -> None:
        nonlocal last_decision
        pending.sort(key=lambda p: p.due)
        while pending and pending[0].due <= until:
            item = pending.pop(0)
            if config.leave_last_day and item.received_at >= last_day_start:
                kept.append(item)
                continue
            message = Message.objects.get(pk=item.message_id)
            if message.status != MessageStatus.IN_REVIEW:
                continue
            at = max(item.due, last_decision)
            if item.first_reviewer_id is None:
                verdict, code = _verdict(rng, item, config.error_rate)
                reviewer = rng.choice(reviewers)
            else:
                # Second reviews draw from their own generator, so that the first decisions of a
                # run are the same whatever DOUBLE_REVIEW_RATE is.
                others = [r for r in reviewers if r.pk != item.first_reviewer_id]
                if not others:
                    continue  # one simulated reviewer: the second review waits for a person
                verdict, code = _verdict(second_rng, item, config.error_rate)
                reviewer = second_rng.choice(others)
            try:
                lock_claim(reviewer=reviewer, message=message)
                decision_record(
                    message=message,
                    reviewer=reviewer,
                    verdict=verdict,
                    claim_type=claim_types[code] if code else None,
                    decided_at=at,
                )
            except ReviewError:
                report.decision_errors += 1  # e.g. a person claimed it in the UI meanwhile
                continue
            last_decision = at
            report.decided += 1
            if item.first_reviewer_id is None and (
                Message.objects.filter(pk=item.message_id, status=MessageStatus.IN_REVIEW).exists()
            ):
                # Drawn for a blind second review: another simulated reviewer takes it later.
                delay = timedelta(hours=second_rng.uniform(*REVIEW_DELAY_HOURS))
                pending.append(
                    _Pending(
                        at + delay,
                        item.message_id,
                        item.label,
                        item.claim_type,
                        item.received_at,
                        first_reviewer_id=reviewer.pk,
                    )
                )
                report.second_reviews += 1

    rows_by_key: dict[str, dict] = {}

    def _ingest_via_sources(writer, items, labels, day_folder: Path, report) -> list[int]:
        demo_rows = [DemoRow(rows_by_key[i.external_id], 0, i.received_at, i.external_id) for i in items]
        sources = writer.write_day(demo_rows, day_folder)
        labels.update(sources.labels)
        reads = [
            *read_mbox(sources.mbox, limits=mail_limits()),
            *((m.external_id, m) for m in read_slack_export(sources.slack)),
            *read_chat_jsonl(sources.sms),
        ]
        outcome = sources_import(reads=reads)
        if outcome.errors:
            raise SimulationError(f"the importers refused simulated messages: {outcome.errors[:3]}")
        keys = [m.external_id for _, m in reads]
        report.messages += len(keys) - len(items)  # a split chat claim is sent as several lines
        return list(Message.objects.filter(external_id__in=keys).values_list("pk", flat=True))

    with _in_process_broker(), override_settings(QA_SAMPLE_RATE=config.qa_rate):
        for index in progress(range(config.days), "simulated days"):
            day = days[index]
            rows = traffic[index * config.per_day : (index + 1) * config.per_day]
            if index >= config.drift_day:
                start = (index - config.drift_day) * config.drift_per_day
                rows = rows + drift[start : start + config.drift_per_day]
            offsets = sorted(rng.uniform(0, 86_400) for _ in rows)
            order = list(range(len(rows)))
            rng.shuffle(order)
            items = []
            for offset, row_index in zip(offsets, order, strict=True):
                row = rows[row_index]
                external_id = f"sim-{run}-{index:03d}-{row['id']}"
                labels[external_id] = (row["label"], row["claim_type"])
                if writer is not None:
                    rows_by_key[external_id] = row
                items.append(
                    IncomingMessage(
                        external_id=external_id,
                        body=row["body"],
                        sender=row.get("sender", ""),
                        channel=row.get("channel", "other"),
                        received_at=datetime.combine(day, datetime.min.time(), tzinfo=UTC)
                        + timedelta(seconds=offset),
                    )
                )
            report.messages += len(items)
            report.drift_messages += sum(1 for row in rows if row["split"] == "drift")

            started = time.perf_counter()
            ids = []
            if writer is not None:
                ids = _ingest_via_sources(writer, items, labels, folder / day.isoformat(), report)
            else:
                for chunk_start in range(0, len(items), settings.BULK_MAX_ITEMS):
                    for result in messages_ingest_bulk(
                        items=items[chunk_start : chunk_start + settings.BULK_MAX_ITEMS]
                    ):
                        if result.status == "error":
                            raise SimulationError(f"ingest refused a simulated message: {result.error}")
                        ids.append(result.message.pk)
            report.seconds["ingest"] += time.perf_counter() - started

            started = time.perf_counter()
            to_explain: list[int] = []
            for chunk_start in range(0, len(ids), settings.SCORING_BATCH_SIZE):
                outcome = messages_score_batch(
                    message_ids=ids[chunk_start : chunk_start + settings.SCORING_BATCH_SIZE]
                )
                to_explain += outcome.to_explain
            # A challenger in shadow scores the same messages, after routing (as its task would).
            for shadow_id in ModelVersion.objects.filter(is_shadow=True, is_active=False).values_list(
                "pk", flat=True
            ):
                for chunk_start in range(0, len(ids), settings.SCORING_BATCH_SIZE):
                    report.shadow_scored += messages_shadow_score(
                        message_ids=ids[chunk_start : chunk_start + settings.SCORING_BATCH_SIZE],
                        version_id=shadow_id,
                    )
            report.seconds["score"] += time.perf_counter() - started

            started = time.perf_counter()
            for chunk_start in range(0, len(to_explain), settings.EXPLAIN_BATCH_SIZE):
                explain(message_ids=to_explain[chunk_start : chunk_start + settings.EXPLAIN_BATCH_SIZE])
            report.explained += len(to_explain)
            report.seconds["explain"] += time.perf_counter() - started

            started = time.perf_counter()
            routed = Message.objects.filter(pk__in=ids).values_list(
                "pk",
                "external_id",
                "status",
                "received_at",
                "routing_prediction__flagged",
                "has_rule_hit",
                "is_qa_sample",
            )
            for pk, external_id, status, received_at, flagged, rule_hit, qa in routed:
                report.flagged += bool(flagged)
                report.rule_hits += bool(rule_hit)
                report.qa_samples += bool(qa)
                if status == MessageStatus.IN_REVIEW:
                    label, code = labels[external_id]
                    delay = timedelta(hours=rng.uniform(*REVIEW_DELAY_HOURS))
                    pending.append(_Pending(received_at + delay, pk, label, code, received_at))
            day_end = datetime.combine(day + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
            review_until(min(day_end, timezone.now()))
            report.seconds["review"] += time.perf_counter() - started

        started = time.perf_counter()
        review_until(timezone.now())
        report.seconds["review"] += time.perf_counter() - started
    report.left_in_queue = len(pending) + len(kept)
    rollup_refresh()
    # The replayed decisions carry past times: sign the chain now (as beat would within
    # AUDIT_CHECKPOINT_INTERVAL_SECONDS), so the audit shows no missing checkpoint for them.
    audit_checkpoint()
    report.seconds = {stage: round(seconds, 1) for stage, seconds in report.seconds.items()}
    return report
