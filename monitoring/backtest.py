"""Backtest of a rule-set draft (issue 19): before a draft is published, what it would have done to
the stored messages of a period, against the rules active now. Services (request, run) and the
figures; the matching engine is scoring.backtest (pure).

It lives in monitoring because it reads every floor: messages and predictions (scoring), the
reviewers' decisions on them (reviews) and the Wilson intervals (monitoring.stats).

What it reports, for the messages received in the period that were scored:
- **added**: messages the draft routes by rules and the active rules do not; **removed**: the reverse.
- For each, per rule (the hits that make the difference; a message hit by two rules counts under
  both) and per claim type: how many; how many the model flagged, the QA sample took or a part
  not read sent to review anyway (they are in the review queue whatever the rules say: an added
  rule adds nothing there); how many were
  reviewed and how (claim, of the rule's type or another; not a claim), with the share of claims
  and, stricter, the share of claims of the rule's (or group's) own claim type, each with its
  Wilson interval, as precision estimates. Only messages that reached review have a
  decision, so for added messages the estimate rests on those the model flagged or the QA sample
  took: read it with its n.
- The queue: routed messages per day in the period, and the expected change per day (added
  messages that would be new to the queue minus removed ones that would leave it).
- A sample of newly matched messages with the match underlined.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from core.publish import publish
from core.roles import Role, has_role
from monitoring import stats
from monitoring.selectors.decisions import effective_decisions
from scoring.backtest import Change, ScanCounts, rule_diff, scan
from scoring.backtest_helper import ScanHelper
from scoring.constants import RouteReason
from scoring.errors import RuleSetError
from scoring.models import Message, RuleSet, RuleSetBacktest, RuleSetDraft
from scoring.routing import has_unread_part
from scoring.rules import RuleSpec
from scoring.selectors import active_rule_set, rule_spec_of, rules_of
from scoring.services.rule_sets import draft_rules

logger = logging.getLogger(__name__)

DEFAULT_DAYS = 30
MAX_DAYS = 365
CHUNK = 5_000  # messages read per round trip, and between two progress updates
SAMPLE_SIZE = 20
SNIPPET_CHARS = 120
IN_QUEUE_ANYWAY = "flagged, QA sample or a part not read"


def draft_specs(draft: RuleSetDraft) -> list[RuleSpec]:
    """The enabled rules of a draft as the engine sees them (version 0: not published)."""
    return [
        RuleSpec(
            rule_id=-(index + 1),
            code=rule.code,
            rule_set_version=0,
            claim_type=rule.claim_type,
            pattern=rule.pattern,
            context_terms=tuple(rule.context_terms),
            context_window=rule.context_window,
            negation_guard=rule.negation_guard,
        )
        for index, rule in enumerate(draft_rules(draft))
        if rule.enabled
    ]


def set_specs(rule_set: RuleSet) -> list[RuleSpec]:
    return [rule_spec_of(rule, rule_set.version) for rule in rules_of(rule_set) if rule.enabled]


def _backtest_create(*, draft: RuleSetDraft, days: int, user=None) -> RuleSetBacktest:
    if draft.published_id is not None:
        raise RuleSetError(f"Draft #{draft.pk} is published already.")
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise RuleSetError(f"The period must be a whole number of days from 1 to {MAX_DAYS}.")
    active = active_rule_set()
    if active is None:
        raise RuleSetError("No rule set is active: there is nothing to compare the draft with.")
    now = timezone.now()
    return RuleSetBacktest.objects.create(
        draft=draft,
        active=active,
        days=days,
        since=now - timedelta(days=days),
        until=now,
        requested_by=user if user is not None and user.pk else None,
    )


def rule_backtest_request(*, draft: RuleSetDraft, user, days: int = DEFAULT_DAYS) -> RuleSetBacktest:
    """Record a pending backtest of `draft` over the last `days` days against the active rules,
    and queue it on the default queue after commit. Refused (RuleSetError, nothing written) for a
    user who is not a compliance admin, a published draft, a bad period or no active rule set."""
    if not has_role(user, Role.COMPLIANCE_ADMIN):
        raise RuleSetError("Only a compliance admin can backtest rule sets.")
    with transaction.atomic():
        backtest = _backtest_create(draft=draft, days=days, user=user)

        transaction.on_commit(lambda: _publish_backtest(backtest.pk))
    return backtest


def _publish_backtest(backtest_id: int) -> bool:
    from monitoring.tasks import run_rule_backtest

    return publish(run_rule_backtest, args=[backtest_id], what=f"backtest {backtest_id} stays pending")


def rule_backtests_sweep(*, older_than: timedelta | None = None) -> int:
    """Publish again every backtest still pending `older_than` (default BACKTEST_STUCK_AFTER_SECONDS)
    after it was requested: its task was never published (the broker was down) or was lost, and
    it would otherwise stay pending for ever. Returns how many were published. Harmless when the
    first task was only slow: a backtest is claimed while pending and a finished one is left as it
    is; beat runs the sweep once per that interval, so a slow queue gets one more task per pending
    backtest per interval, not one per tick."""
    age = older_than if older_than is not None else timedelta(seconds=settings.BACKTEST_STUCK_AFTER_SECONDS)
    stuck = RuleSetBacktest.objects.filter(
        status=RuleSetBacktest.Status.PENDING, created_at__lt=timezone.now() - age
    ).values_list("pk", flat=True)
    return sum(_publish_backtest(backtest_id) for backtest_id in stuck.order_by("pk"))


def rule_backtest_now(*, draft: RuleSetDraft, days: int = DEFAULT_DAYS) -> RuleSetBacktest:
    """Record a backtest and compute it in this process (manage.py backtest_rules: whoever runs a
    management command already holds the deployment). Same refusals as a request, role aside."""
    backtest = _backtest_create(draft=draft, days=days)
    return rule_backtest_run(backtest_id=backtest.pk)


def rule_backtest_run(*, backtest_id: int) -> RuleSetBacktest:
    """Compute a pending (or re-delivered running) backtest and store its results; a failure is
    stored with its reason; a finished backtest is left as it is (running it twice is harmless).
    `processed` of `total` is updated after every chunk of messages, for the progress bar."""
    claimed = RuleSetBacktest.objects.filter(
        pk=backtest_id, status__in=[RuleSetBacktest.Status.PENDING, RuleSetBacktest.Status.RUNNING]
    ).update(status=RuleSetBacktest.Status.RUNNING, started_at=timezone.now(), processed=0)
    backtest = RuleSetBacktest.objects.select_related("draft", "active").get(pk=backtest_id)
    if not claimed:
        return backtest

    def progress(processed: int, total: int) -> None:
        RuleSetBacktest.objects.filter(pk=backtest_id).update(processed=processed, total=total)

    try:
        results = backtest_compute(
            active=set_specs(backtest.active),
            draft=draft_specs(backtest.draft),
            since=backtest.since,
            until=backtest.until,
            progress=progress,
        )
    except Exception as exc:
        logger.exception("backtest %s failed", backtest_id)
        backtest.status, backtest.error = RuleSetBacktest.Status.FAILED, f"{type(exc).__name__}: {exc}"
    else:
        backtest.status, backtest.results = RuleSetBacktest.Status.DONE, results
        backtest.processed = backtest.total = results["messages"]
    backtest.finished_at = timezone.now()
    backtest.save(update_fields=["status", "error", "results", "processed", "total", "finished_at"])
    return backtest


# --- The computation ---------------------------------------------------------------------------------


def _bodies(messages) -> Iterator[list[tuple[int, str, str | None]]]:
    """(id, body, stored routing parts as JSON text) of `messages` in id order, CHUNK at a time.
    The ids are read first (the period's index gives them without touching a body), then each
    chunk as a range of primary keys: ordering the period's rows, bodies and all, by id made SQLite
    sort them in a temporary B-tree, which at a million messages cost more than the scan itself.
    The routing parts come as text, decoded for the prefilter's candidates only."""
    ids = list(messages.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), CHUNK):
        part = ids[start : start + CHUNK]
        chunk = (
            messages.filter(pk__gte=part[0], pk__lte=part[-1])
            .annotate(parts=Cast("routing_prediction__segments", TextField()))
            .order_by("id")
            .values_list("id", "body", "parts")
        )
        # the ORM's query, its rows as the driver gives them: an integer and a text need no
        # conversion, and the per-row work of values_list was a third of this process's reading
        sql, params = chunk.query.sql_with_params()
        with connections[chunk.db].cursor() as cursor:
            cursor.execute(sql, params)
            yield cursor.fetchall()


def _in_period(since: datetime, until: datetime):
    return Message.objects.filter(
        received_at__gte=since, received_at__lt=until, routing_prediction__isnull=False
    )


@contextlib.contextmanager
def _helper(active: list[RuleSpec], draft: list[RuleSpec], total: int) -> Iterator[ScanHelper | None]:
    """A second process for the scan of a large backtest (BACKTEST_HELPER_MIN_MESSAGES), else None."""
    least = settings.BACKTEST_HELPER_MIN_MESSAGES
    if not least or total < least or (os.cpu_count() or 1) < 2:
        yield None
        return
    with ScanHelper(active, draft) as helper:
        yield helper


def backtest_compute(
    *,
    active: list[RuleSpec],
    draft: list[RuleSpec],
    since: datetime,
    until: datetime,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Every figure of the backtest (module docstring) as JSON-safe data."""
    started = timezone.now()
    diff = rule_diff(active, draft)
    messages = _in_period(since, until)
    total = messages.count()
    counts = ScanCounts()
    changes: list[Change] = []
    if diff.active_only or diff.draft_only:
        with _helper(active, draft, total) as helper:
            for chunk in _bodies(messages):
                changes += scan(chunk, diff, counts=counts, helper=helper)
                if progress is not None:
                    progress(counts.messages, total)
            if helper is not None:
                changes += helper.collect(counts)
                changes.sort(key=lambda change: change.message_id)
    else:
        counts.messages = total  # nothing differs: no message can route differently
    days = max((until - since).total_seconds() / 86_400, 1e-9)
    routed = messages.exclude(route_reason__in=["", RouteReason.CLEARED]).count()
    result = _figures(changes, days=days)
    result.update(
        {
            "messages": total,
            "since": since.isoformat(),
            "until": until.isoformat(),
            "days": round(days, 2),
            "rules": diff.changed_codes,
            "routed_per_day": routed / days,
            "scan": {
                "candidates": counts.candidates,
                "full_matches": counts.full_matches,
                "seconds": (timezone.now() - started).total_seconds(),
            },
        }
    )
    return result


def _message_facts(ids: list[int]) -> tuple[dict[int, dict], dict[int, dict]]:
    """Per message: external id, received, flagged, QA sample, a part not read (routed to review
    whatever the rules say: scoring.routing); its counted decision, if reviewed."""
    facts: dict[int, dict] = {}
    decisions: dict[int, dict] = {}
    for start in range(0, len(ids), 1000):
        part = ids[start : start + 1000]
        for row in Message.objects.filter(pk__in=part).values(
            "id",
            "external_id",
            "received_at",
            "is_qa_sample",
            "attachments",
            flagged=F("routing_prediction__flagged"),
        ):
            row["unread_part"] = has_unread_part(row.pop("attachments"))
            facts[row["id"]] = row
        for row in (
            effective_decisions()
            .filter(message_id__in=part)
            .order_by("sequence")
            .values("message_id", "verdict", "claim_type__code")
        ):
            decisions[row["message_id"]] = row  # the latest counted decision wins
    return facts, decisions


class _Group:
    """Counts of one (kind, rule or claim type) group."""

    def __init__(self) -> None:
        self.messages = 0
        self.in_queue_anyway = 0
        self.flagged = 0
        self.reviewed = 0
        self.claims = 0
        self.claims_of_type = 0

    def add(self, fact: dict, decision: dict | None, claim_type: str) -> None:
        self.messages += 1
        self.flagged += bool(fact["flagged"])
        self.in_queue_anyway += bool(fact["flagged"] or fact["is_qa_sample"] or fact["unread_part"])
        if decision is not None:
            self.reviewed += 1
            if decision["verdict"] == "claim":
                self.claims += 1
                self.claims_of_type += decision["claim_type__code"] == claim_type

    def as_dict(self) -> dict:
        return {
            "messages": self.messages,
            "flagged": self.flagged,
            "in_queue_anyway": self.in_queue_anyway,
            "queue_effect": self.messages - self.in_queue_anyway,
            "reviewed": self.reviewed,
            "claims": self.claims,
            "claims_of_type": self.claims_of_type,
            "not_claims": self.reviewed - self.claims,
            # any claim, and a claim of the group's own claim type (the rule's): both with their
            # Wilson interval, over the reviewed messages
            "precision": stats.rate(self.claims, self.reviewed).as_dict(),
            "precision_of_type": stats.rate(self.claims_of_type, self.reviewed).as_dict(),
        }


def _snippet(body: str, start: int, end: int) -> dict[str, str]:
    lo, hi = max(0, start - SNIPPET_CHARS), min(len(body), end + SNIPPET_CHARS)
    return {
        "before": ("…" if lo else "") + body[lo:start],
        "match": body[start:end],
        "after": body[end:hi] + ("…" if hi < len(body) else ""),
    }


def _sample(changes: Iterable[Change], facts: dict[int, dict]) -> list[dict]:
    """Up to SAMPLE_SIZE added messages, spread evenly over the period (by message id)."""
    added = sorted((c for c in changes if c.kind == "added"), key=lambda c: c.message_id)
    chosen = added[:: max(1, len(added) // SAMPLE_SIZE)][:SAMPLE_SIZE]
    bodies = dict(Message.objects.filter(pk__in=[c.message_id for c in chosen]).values_list("id", "body"))
    sample = []
    for change in chosen:
        fact, hit = facts[change.message_id], change.hits[0]
        sample.append(
            {
                "message_id": change.message_id,
                "external_id": fact["external_id"],
                "received_at": fact["received_at"].isoformat(),
                "flagged": bool(fact["flagged"]),
                "rules": sorted({h.code for h in change.hits}),
                "claim_type": hit.claim_type,
                **_snippet(bodies[change.message_id], hit.start, hit.end),
            }
        )
    return sample


def _figures(changes: list[Change], *, days: float) -> dict[str, Any]:
    facts, decisions = _message_facts([c.message_id for c in changes])
    by_rule: dict[tuple[str, str, str], _Group] = defaultdict(_Group)
    by_type: dict[tuple[str, str], _Group] = defaultdict(_Group)
    totals: dict[str, _Group] = defaultdict(_Group)
    for change in changes:
        fact, decision = facts[change.message_id], decisions.get(change.message_id)
        types = sorted({h.claim_type for h in change.hits})
        totals[change.kind].add(fact, decision, types[0])
        for code, claim_type in sorted({(h.code, h.claim_type) for h in change.hits}):
            by_rule[(change.kind, code, claim_type)].add(fact, decision, claim_type)
        for claim_type in types:
            by_type[(change.kind, claim_type)].add(fact, decision, claim_type)
    added, removed = totals["added"].as_dict(), totals["removed"].as_dict()
    return {
        "added": added,
        "removed": removed,
        "queue_change_per_day": (added["queue_effect"] - removed["queue_effect"]) / days,
        "by_rule": [
            {"kind": kind, "rule": code, "claim_type": claim_type, **group.as_dict()}
            for (kind, code, claim_type), group in sorted(by_rule.items())
        ],
        "by_claim_type": [
            {"kind": kind, "claim_type": claim_type, **group.as_dict()}
            for (kind, claim_type), group in sorted(by_type.items())
        ],
        "sample": _sample(changes, facts),
    }
