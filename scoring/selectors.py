"""Reads of the scoring app. Each returns what its caller needs in a fixed number of queries."""

from __future__ import annotations

import threading
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Prefetch, QuerySet
from django.utils import timezone

from scoring.models import Message, Rule, RuleSet, WorkerDevice
from scoring.rules import CompiledRules, RuleSpec, compile_rules


def active_rule_set() -> RuleSet | None:
    """The active rule set, or None on a database without one."""
    return RuleSet.objects.filter(is_active=True).first()


def rule_sets_with_counts() -> QuerySet[RuleSet]:
    """Every rule set, newest first, with its number of rules (for lists: no N+1)."""
    return RuleSet.objects.select_related("created_by", "restores").annotate(rule_count=Count("rules"))


def rules_of(rule_set: RuleSet) -> QuerySet[Rule]:
    """The rules of one set (enabled or not), in code order, with their claim types."""
    return rule_set.rules.select_related("claim_type").order_by("code")


def rule_spec_of(rule: Rule, version: int) -> RuleSpec:
    """A Rule row flattened into what the pure engine needs."""
    return RuleSpec(
        rule_id=rule.pk,
        code=rule.code,
        rule_set_version=version,
        claim_type=rule.claim_type.code,
        pattern=rule.pattern,
        context_terms=tuple(rule.context_terms or ()),
        context_window=rule.context_window,
        negation_guard=rule.negation_guard,
    )


def active_rule_specs() -> list[RuleSpec]:
    """The enabled rules of the active rule set, in code order. One query."""
    rules = (
        Rule.objects.filter(rule_set__is_active=True, enabled=True)
        .select_related("rule_set", "claim_type")
        .order_by("code")
    )
    return [rule_spec_of(rule, rule.rule_set.version) for rule in rules]


# Published rule sets are never edited in place (scoring.services.rule_sets publishes a new
# version instead), so the active set's identity is a sound cache key. created_at is part of it
# because a rolled-back test transaction can hand the same pk and version to different content.
_cache_lock = threading.Lock()
_cache: tuple[tuple[int, int, datetime] | None, CompiledRules] | None = None


def active_compiled_rules() -> CompiledRules:
    """The active rules, compiled. Costs one small query per call; recompiles only when the
    active rule set changed since the last call in this process."""
    global _cache
    row = RuleSet.objects.filter(is_active=True).values_list("pk", "version", "created_at").first()
    key = tuple(row) if row else None
    cached = _cache
    if cached is not None and cached[0] == key:
        return cached[1]
    with _cache_lock:
        compiled = compile_rules(active_rule_specs()) if key else CompiledRules()
        # Between the two reads another publish may have happened: key by what was compiled.
        versions = compiled.versions
        if key is not None and versions and versions != {key[1]}:
            key = None  # compiled a newer set than keyed: do not cache a mismatched pair
        _cache = (key, compiled) if key is not None else None
        return compiled


def clear_compiled_rules_cache() -> None:
    """Forget the compiled rules (tests; never needed in production)."""
    global _cache
    with _cache_lock:
        _cache = None


def feed_of(user: AbstractBaseUser | AnonymousUser | None) -> int | None:
    """The feed a submission belongs to: the submitting account's id, or None (no account: file
    imports, simulations), which is a feed of its own."""
    return user.pk if user is not None and user.pk else None


def messages_of_feed(user: AbstractBaseUser | AnonymousUser | None) -> QuerySet[Message]:
    """The messages one feed submitted: the scope of its external ids and of what it may read."""
    feed = feed_of(user)
    if feed is None:
        return Message.objects.filter(submitted_by__isnull=True)
    return Message.objects.filter(submitted_by_id=feed)


def message_statuses_of_feed(user: AbstractBaseUser) -> QuerySet[Message]:
    """What a feed may read of its own messages: their ids, external ids and status, no body,
    prediction or explanation (an ingest token is no oracle of the model)."""
    return messages_of_feed(user).only(
        "id", "external_id", "status", "received_at", "created_at", "updated_at"
    )


def messages_for_api_list() -> QuerySet[Message]:
    return Message.objects.select_related(
        "routing_prediction__model_version", "routing_prediction__claim_type"
    ).defer("body")


def worker_devices(*, now=None) -> list[dict]:
    """Every model worker's last device report (scoring.worker), newest first; a report older
    than WORKER_REPORT_MAX_AGE_SECONDS is `stale` (the worker may be long gone)."""
    now = now or timezone.now()
    return [
        {
            "node": w.node,
            "queues": w.queues,
            "requested": w.requested,
            "device": w.device,
            "gpu_name": w.gpu_name,
            "usable": w.usable,
            "consuming": w.consuming,
            "reason": w.reason,
            "torch_version": w.torch_version,
            "cuda_version": w.cuda_version,
            "cuda_available": w.cuda_available,
            "reported_at": w.reported_at.isoformat(),
            "stale": (now - w.reported_at).total_seconds() > settings.WORKER_REPORT_MAX_AGE_SECONDS,
        }
        for w in WorkerDevice.objects.order_by("-reported_at")
    ]


FAILED_FIELDS = (
    "id",
    "external_id",
    "channel",
    "received_at",
    "failed_at",
    "status",
    "status_reason",
    "attempts",
)


def failed_messages() -> QuerySet[Message]:
    """Messages that failed for good (scoring refused them, or they crashed their worker alone
    MAX_ATTEMPTS times), most recent first, with their retry records (for lists: no N+1)."""
    from scoring.constants import MessageStatus
    from scoring.models import MessageRetry

    retries = MessageRetry.objects.select_related("requested_by")
    return (
        Message.objects.filter(status=MessageStatus.FAILED)
        .order_by("-failed_at", "-id")
        .only(*FAILED_FIELDS)
        .prefetch_related(Prefetch("retries", queryset=retries, to_attr="retry_records"))
    )
