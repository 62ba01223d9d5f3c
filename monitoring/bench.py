"""Seeding for `manage.py bench_metrics` (PostgreSQL only): bulk SQL (generate_series) into the
real tables of a scratch schema that is migrated from scratch and dropped at the end, so the
real data is never touched.

What is seeded, over BENCH_DAYS days: `messages` messages, each with its routing prediction
(model version A for the first half, B - activated at the midpoint - for the second), routed
10 % flagged (a third of them with a rule hit too), 2 % rule hits below threshold, 9 % QA sample,
the rest cleared; rule matches; an Integrated Gradients explanation per flagged message (80 %
passed, 2 % failed computations); `decisions` review decisions on the reviewed messages, 1 % of
them corrections that supersede an earlier one, with a disagreement rise for risk_free QA samples
in the last third (so alerts exist). Decision hashes are unique placeholders, not a valid chain:
the chain is not what is measured. Rows are given `updated_at` in their own past, as history is.
"""

# ruff: noqa: S608 -- the SQL is composed from constants, model metadata and integers computed
# here (no input from a request or a user), which is what generate_series seeding needs.

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import Group, User
from django.db import connection, models
from django.utils import timezone

from core.roles import Role
from explanations.models import Explanation
from reviews.models import ReviewDecision
from scoring.constants import CLASS_LABELS
from scoring.models import ClaimType, Message, ModelActivation, ModelVersion, Prediction, Rule, RuleMatch

BENCH_DAYS = 120
VACUUMED = (
    "scoring_message",
    "scoring_prediction",
    "scoring_rulematch",
    "explanations_explanation",
    "reviews_reviewdecision",
    "monitoring_messagedayrollup",
)


@contextmanager
def scratch_schema(schema: str) -> Iterator[None]:
    """Point this process's connection at a new, empty schema for the duration, then drop it."""
    options = connection.settings_dict.setdefault("OPTIONS", {})
    saved = options.get("options")
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE SCHEMA "{schema}"')
    connection.close()
    options["options"] = f"-c search_path={schema}"
    try:
        yield
    finally:
        connection.close()
        if saved is None:
            options.pop("options", None)
        else:
            options["options"] = saved
        with connection.cursor() as cursor:
            cursor.execute(f'DROP SCHEMA "{schema}" CASCADE')


def insert_select(model: type[models.Model], exprs: dict[str, str], source: str) -> int:
    """INSERT INTO model's table SELECT ... FROM `source`, with `exprs` (SQL per field name) for
    the fields given and each other field's default (or NULL, or '' for a blank text field).
    Expressions must not contain '%' (use mod())."""
    columns, values, params = [], [], []
    for field in model._meta.concrete_fields:
        name = field.attname if field.attname in exprs else field.name
        if name in exprs:
            values.append(exprs[name])
        elif field.primary_key:
            continue
        elif field.has_default():
            default = field.get_default()
            if isinstance(field, models.JSONField):
                values.append("%s::jsonb")
                params.append(json.dumps(default))
            else:
                values.append("%s")
                params.append(default)
        elif field.null:
            values.append("NULL")
        elif isinstance(field, models.CharField | models.TextField):
            values.append("''")
        else:
            raise ValueError(f"bench seeding has no value for {model._meta.db_table}.{field.column}")
        columns.append(f'"{field.column}"')
    table = model._meta.db_table
    sql = f'INSERT INTO "{table}" ({", ".join(columns)}) SELECT {", ".join(values)} FROM {source}'
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


@dataclass
class Seeded:
    admin: User
    versions: list[ModelVersion]
    messages: int
    decisions: int
    first_day: datetime


def _version(name: str) -> ModelVersion:
    return ModelVersion.objects.create(
        name=name,
        base_model="bench",
        artifact_path="/bench",
        artifact_sha256="0" * 64,
        corpus_sha256="0" * 64,
        labels=list(CLASS_LABELS),
        threshold=0.5,
        threshold_rule="bench",
    )


def _literal(moment: datetime) -> str:
    return f"TIMESTAMPTZ '{moment.isoformat()}'"


def seed(*, messages: int, decisions: int, progress=None) -> Seeded:
    """Seed the scratch schema (see the module docstring). Call inside one transaction."""
    step = progress or (lambda label: None)
    now = timezone.now()
    first_day = (now - timedelta(days=BENCH_DAYS)).replace(hour=0, minute=0, second=0, microsecond=0)
    types = list(ClaimType.objects.order_by("position"))
    t = [str(ct.pk) for ct in types]
    rules = [Rule.objects.filter(claim_type=ct).order_by("pk").first() for ct in types]
    if any(rule is None for rule in rules):
        raise ValueError("the seeded rule set has no rule for some claim type")
    version_a, version_b = _version("bench-a"), _version("bench-b")
    half = messages // 2
    midpoint = first_day + timedelta(days=BENCH_DAYS / 2)
    for version, moment in ((version_a, first_day - timedelta(days=1)), (version_b, midpoint)):
        activation = ModelActivation.objects.create(model_version=version, reason="bench")
        ModelActivation.objects.filter(pk=activation.pk).update(activated_at=moment)
    ModelVersion.objects.filter(pk=version_b.pk).update(is_active=True, activated_at=midpoint)
    reviewers = []
    for i in range(3):
        user = User.objects.create(username=f"bench-reviewer-{i}")
        user.groups.add(Group.objects.get(name=Role.REVIEWER))
        reviewers.append(user)
    admin = User.objects.create(username="bench-admin")
    admin.groups.add(Group.objects.get(name=Role.COMPLIANCE_ADMIN))

    seconds_per_message = BENCH_DAYS * 86_400 / messages
    # One row per message with its derived facts; r picks the route, u is a uniform draw.
    facts = (
        "(SELECT g, r, u, received, "
        f"CASE WHEN r < 100 THEN 0.5 + 0.5 * u ELSE 0.49 * u * u * u * u END AS score, "
        f"(ARRAY[{','.join(t)}])[1 + mod(g, 4)]::bigint AS ptype, "
        f"CASE WHEN g <= {half} THEN {version_a.pk} ELSE {version_b.pk} END AS version, "
        "CASE WHEN r < 30 THEN 'model_and_rule' WHEN r < 100 THEN 'model_flag' "
        "WHEN r < 120 THEN 'rule_hit' WHEN r < 210 THEN 'qa_sample' ELSE 'cleared' END AS route "
        "FROM (SELECT g, mod(g * 7919, 1000) AS r, mod(g * 104729, 1000003)::float / 1000003 AS u, "
        f"{_literal(first_day)} + ((g - 1) * {seconds_per_message} + mod(g * 37, 600)) * interval '1 second' "
        f"AS received FROM generate_series(1::bigint, {messages}) AS g) AS base) AS f"
    )
    step("messages")
    body = (
        "repeat('Thanks for the call today, please find the quarterly letter attached. ', "
        "(CASE WHEN mod(g, 97) = 0 THEN 40 ELSE 1 + mod(g, 9) END)::int) || 'Ref ' || g"
    )
    insert_select(
        Message,
        {
            "id": "g",
            "external_id": "'bench-' || g",
            "body": body,
            "body_sha256": f"encode(sha256(convert_to({body}, 'UTF8')), 'hex')",
            "channel": "'email'",
            "received_at": "received",
            "status": "CASE WHEN r < 210 THEN 'in_review' ELSE 'cleared' END",
            "route_reason": "route",
            "is_qa_sample": "route = 'qa_sample'",
            "has_rule_hit": "route IN ('model_and_rule', 'rule_hit')",
            "routing_prediction_id": "g",
            "queue_score": "score",
            "attempts": "0",
            "created_at": "received",
            "updated_at": "received + interval '1 hour'",
            "queued_at": "received",
            "scored_at": "received + interval '1 second'",
            "in_review_at": "CASE WHEN r < 210 THEN received + interval '2 seconds' END",
            "cleared_at": "CASE WHEN r >= 210 THEN received + interval '1 second' END",
        },
        facts,
    )
    step("predictions")
    insert_select(
        Prediction,
        {
            "id": "g",
            "message_id": "g",
            "model_version_id": "version",
            "score": "score",
            "claim_type_id": "ptype",
            "probabilities": "'{}'::jsonb",
            "window_scores": "'[]'::jsonb",
            "threshold": "0.5",
            "flagged": "r < 100",
            "is_shadow": "false",
            "latency_ms": "5.0",
            "created_at": "received + interval '1 second'",
        },
        facts,
    )
    step("rule matches")
    rule_ids = ",".join(str(rule.pk) for rule in rules)
    rule_codes = ",".join(f"'{rule.code}'" for rule in rules)
    rule_types = ",".join(str(rule.claim_type_id) for rule in rules)
    # A flagged message's rule is of its predicted type; a rule hit below threshold another one.
    rule_index = "(CASE WHEN route = 'model_and_rule' THEN mod(g, 4) ELSE mod(g + 1, 4) END) + 1"
    insert_select(
        RuleMatch,
        {
            "message_id": "g",
            "rule_id": f"(ARRAY[{rule_ids}])[{rule_index}]::bigint",
            "rule_code": f"(ARRAY[{rule_codes}])[{rule_index}]",
            "rule_set_version": str(rules[0].rule_set.version),
            "claim_type_id": f"(ARRAY[{rule_types}])[{rule_index}]::bigint",
            "start": "0",
            "end": "6",
            "text": "'Thanks'",
        },
        facts + " WHERE route IN ('model_and_rule', 'rule_hit')",
    )
    step("explanations")
    insert_select(
        Explanation,
        {
            "message_id": "g",
            "prediction_id": "g",
            "model_version_id": "version",
            "method": "'integrated_gradients'",
            "status": "CASE WHEN mod(g, 50) = 0 THEN 'failed' ELSE 'ok' END",
            "passed": "CASE WHEN mod(g, 50) = 0 THEN NULL ELSE mod(g, 5) <> 0 END",
            "created_at": "received + interval '3 seconds'",
        },
        facts + " WHERE r < 100",
    )
    step("decisions")
    corrections = decisions // 100
    base = decisions - corrections
    late = first_day + timedelta(days=BENCH_DAYS * 2 / 3)
    reviewed = (
        "(SELECT f.*, row_number() OVER (ORDER BY g) AS seq, mod(g * 13, 100) AS v FROM "
        f"{facts} WHERE r < 210 ORDER BY g LIMIT {base}) AS d"
    )
    # Verdicts: 10 % of flags are not claims; 30 % of rule hits below threshold are claims; QA
    # samples are claims 2 % of the time, and risk_free QA samples 12 % in the last third.
    claim = (
        "CASE WHEN r < 100 THEN v >= 10 WHEN r < 120 THEN v < 30 "
        f"ELSE v < (CASE WHEN received >= {_literal(late)} AND mod(g + 2, 4) = 1 THEN 12 ELSE 2 END) END"
    )
    reviewer_ids = ",".join(str(user.pk) for user in reviewers)
    claim_type = (
        f"CASE WHEN NOT ({claim}) THEN NULL WHEN r < 100 AND v < 95 THEN ptype "
        f"ELSE (ARRAY[{','.join(t)}])[1 + mod(g + 2, 4)]::bigint END"
    )
    insert_select(
        ReviewDecision,
        {
            "sequence": "seq",
            "message_id": "g",
            "reviewer_id": f"(ARRAY[{reviewer_ids}])[1 + mod(g, 3)]::bigint",
            "verdict": f"CASE WHEN {claim} THEN 'claim' ELSE 'no_claim' END",
            "claim_type_id": claim_type,
            "snapshot": "'{}'::jsonb",
            "model_version_id": "version",
            "model_score": "score",
            "model_threshold": "0.5",
            "model_flagged": "r < 100",
            "model_claim_type_id": "ptype",
            "is_qa_sample": "route = 'qa_sample'",
            "agrees_with_model": f"(r < 100) = ({claim})",
            "claim_type_matches": f"CASE WHEN r < 100 AND {claim} THEN ({claim_type}) = ptype END",
            "created_at": (
                f"LEAST(received + interval '2 hours' + mod(g, 3600) * interval '1 second', {_literal(now)})"
            ),
            "content_hash": "md5('bench-decision-' || seq) || md5('bench-hash-' || seq)",
            "previous_hash": "repeat('0', 64)",
        },
        reviewed,
    )
    # Corrections: a second decision, with the other verdict, that supersedes the first.
    insert_select(
        ReviewDecision,
        {
            "sequence": f"{base} + row_number() OVER (ORDER BY d.id)",
            "message_id": "d.message_id",
            "reviewer_id": "d.reviewer_id",
            "verdict": "CASE WHEN d.verdict = 'claim' THEN 'no_claim' ELSE 'claim' END",
            "claim_type_id": f"CASE WHEN d.verdict = 'claim' THEN NULL ELSE {t[0]} END",
            "supersedes_id": "d.id",
            "supersede_reason": "'bench correction'",
            "snapshot": "'{}'::jsonb",
            "model_version_id": "d.model_version_id",
            "model_score": "d.model_score",
            "model_threshold": "d.model_threshold",
            "model_flagged": "d.model_flagged",
            "model_claim_type_id": "d.model_claim_type_id",
            "is_qa_sample": "d.is_qa_sample",
            "agrees_with_model": "d.model_flagged = (d.verdict <> 'claim')",
            "claim_type_matches": (
                f"CASE WHEN d.model_flagged AND d.verdict <> 'claim' THEN d.model_claim_type_id = {t[0]} END"
            ),
            "created_at": f"LEAST(d.created_at + interval '1 day', {_literal(now)})",
            "content_hash": "md5('bench-correction-' || d.id) || md5('bench-fix-' || d.id)",
            "previous_hash": "repeat('0', 64)",
        },
        f'(SELECT * FROM "{ReviewDecision._meta.db_table}" WHERE mod(message_id, 97) = 0 '
        f"ORDER BY id LIMIT {corrections}) AS d",
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE \"scoring_message\" AS m SET status = 'decided', decided_at = d.created_at "
            'FROM "reviews_reviewdecision" AS d WHERE d.message_id = m.id AND d.supersedes_id IS NULL'
        )
        for table in ("scoring_message", "scoring_prediction"):
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
            )
        cursor.execute('SELECT count(*) FROM "reviews_reviewdecision"')
        (count,) = cursor.fetchone()
    return Seeded(
        admin=admin, versions=[version_a, version_b], messages=messages, decisions=count, first_day=first_day
    )
