"""factory_boy factories for the rows tests need. Claim types come from the data migration."""

from __future__ import annotations

import hashlib

import factory
from django.contrib.auth.models import Group, User
from django.utils import timezone

from scoring.constants import CLASS_LABELS, MessageStatus
from scoring.models import ClaimType, Message, ModelVersion, Prediction


def claim_type(code: str) -> ClaimType:
    return ClaimType.objects.get(code=code)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.test")
    password = factory.PostGenerationMethodCall("set_password", "correct-horse-battery-staple")

    @factory.post_generation
    def role(self, create: bool, extracted: str | None, **kwargs: object) -> None:
        if create and extracted:
            self.groups.add(Group.objects.get(name=extracted))
        if create:
            self.save()


class ModelVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ModelVersion

    name = factory.Sequence(lambda n: f"test-model-{n}")
    base_model = "tiny-bert"
    artifact_path = factory.LazyAttribute(lambda mv: f"/nonexistent/{mv.name}")
    artifact_sha256 = "0" * 64
    corpus_sha256 = "0" * 64
    labels = list(CLASS_LABELS)
    threshold = 0.5
    threshold_rule = "test threshold"


class MessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Message

    external_id = factory.Sequence(lambda n: f"ext-{n}")
    body = factory.Sequence(lambda n: f"Message number {n}: please find the quarterly letter attached.")
    body_sha256 = factory.LazyAttribute(lambda m: hashlib.sha256(m.body.encode()).hexdigest())
    sender = "advisor@example.test"
    channel = "email"
    received_at = factory.LazyFunction(timezone.now)
    status = MessageStatus.RECEIVED


class PredictionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Prediction

    message = factory.SubFactory(MessageFactory)
    model_version = factory.SubFactory(ModelVersionFactory)
    score = 0.9
    claim_type = factory.LazyFunction(lambda: claim_type("guaranteed_returns"))
    probabilities = factory.LazyAttribute(
        lambda p: {
            "no_claim": 1 - p.score,
            "guaranteed_returns": p.score,
            "risk_free": 0.0,
            "performance_forecast": 0.0,
            "regulatory_endorsement": 0.0,
        }
    )
    window_scores = factory.LazyAttribute(
        lambda p: [{"start": 0, "end": len(p.message.body), "score": p.score}]
    )
    threshold = factory.LazyAttribute(lambda p: p.model_version.threshold)
    flagged = factory.LazyAttribute(lambda p: p.score >= p.threshold)
    latency_ms = 5.0
