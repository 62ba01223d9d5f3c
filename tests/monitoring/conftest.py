"""Fixtures of the monitoring tests: routed messages with chosen facts, decisions at chosen
times (through the real decision service), and signed-in clients."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from core.roles import Role
from monitoring.models import LengthReference
from scoring.constants import MessageStatus, RouteReason
from scoring.models import Message, ModelVersion
from tests.factories import (
    ExplanationFactory,
    MessageFactory,
    ModelVersionFactory,
    PredictionFactory,
    ReviewDecisionFactory,
    RuleMatchFactory,
    UserFactory,
    claim_type,
)


def day_at(day: date, hour: int = 12, minute: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


@pytest.fixture
def base_day() -> date:
    """A Monday well in the past, so that decisions replayed there are never in the future."""
    today = timezone.now().date()
    monday = today - timedelta(days=today.weekday())
    return monday - timedelta(weeks=8)


@pytest.fixture
def version(db) -> ModelVersion:
    return ModelVersionFactory(threshold=0.5)


RULE_PHRASE = "guaranteed returns"


def routed(
    version: ModelVersion,
    *,
    received_at: datetime,
    score: float,
    claim_code: str = "guaranteed_returns",
    route: str | None = None,
    body: str | None = None,
    rule_code: str | None = None,
    status: str = MessageStatus.IN_REVIEW,
) -> Message:
    """A message scored by `version` and routed as the pipeline would: flagged when score >=
    threshold; a rule hit (of `rule_code`'s type) when asked; QA sample or cleared otherwise."""
    flagged = score >= version.threshold
    has_rule = rule_code is not None
    if route is None:
        if flagged:
            route = RouteReason.MODEL_AND_RULE if has_rule else RouteReason.MODEL_FLAG
        else:
            route = RouteReason.RULE_HIT if has_rule else RouteReason.QA_SAMPLE
    text = body or f"Our letter of {received_at:%Y-%m-%d %H:%M:%S.%f}: {RULE_PHRASE} for every client."
    message = MessageFactory(
        body=text,
        received_at=received_at,
        status=status,
        is_qa_sample=route == RouteReason.QA_SAMPLE,
        route_reason=route,
        has_rule_hit=has_rule,
    )
    prediction = PredictionFactory(
        message=message, model_version=version, score=score, claim_type=claim_type(claim_code)
    )
    if has_rule:
        RuleMatchFactory(
            message=message,
            phrase=RULE_PHRASE,
            rule__claim_type=claim_type(rule_code),
        )
    Message.objects.filter(pk=message.pk).update(routing_prediction=prediction, queue_score=score)
    message.refresh_from_db()
    return message


def decide(message: Message, *, verdict: str, claim_code: str | None = None, at: datetime, reviewer=None):
    """A first-level decision recorded by the real service, replayed at `at`."""
    return ReviewDecisionFactory(
        message=message,
        reviewer=reviewer or UserFactory(username="mon_reviewer", role=Role.REVIEWER),
        verdict=verdict,
        claim_type=claim_type(claim_code) if claim_code else None,
        decided_at=at,
    )


def explained(message: Message, *, passed: bool = True, method: str = "integrated_gradients"):
    return ExplanationFactory(
        message=message, prediction=message.routing_prediction, passed=passed, method=method
    )


def length_reference_for(version: ModelVersion, *, edges: list[float], proportions: list[float], p99: float):
    return LengthReference.objects.create(
        corpus_sha256=version.corpus_sha256,
        corpus_path="hand-made",
        rows=1000,
        p99_chars=p99,
        edges=edges,
        proportions=proportions,
    )


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin_client_(admin_user) -> Client:
    return signed_in(admin_user)
