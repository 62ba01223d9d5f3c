"""factory_boy factories for the rows tests need. Claim types come from the data migration."""

from __future__ import annotations

import hashlib
import re

import factory
import numpy as np
from django.contrib.auth.models import Group, User
from django.utils import timezone

from explanations.attention_codec import encode_array
from explanations.models import AttentionDiagnostic, Explanation, ExplanationMethod, ExplanationStatus
from reviews.models import ReviewDecision
from scoring.constants import CLASS_LABELS, MessageStatus
from scoring.models import ClaimType, Message, ModelVersion, Prediction, Rule, RuleMatch, RuleSet


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


# --- Rules, explanations, attention, decisions (reviews) ----------------------------------------


class RuleSetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RuleSet

    version = factory.Sequence(lambda n: 1000 + n)
    is_active = False
    note = "test rule set"


class RuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Rule

    rule_set = factory.SubFactory(RuleSetFactory)
    code = factory.Sequence(lambda n: f"GR-{n:03d}")
    claim_type = factory.LazyFunction(lambda: claim_type("guaranteed_returns"))
    pattern = r"guaranteed\s+returns?"


class RuleMatchFactory(factory.django.DjangoModelFactory):
    """A rule hit on `phrase` (the first occurrence in the message body)."""

    class Meta:
        model = RuleMatch
        exclude = ("phrase",)

    message = factory.SubFactory(MessageFactory)
    rule = factory.SubFactory(RuleFactory)
    phrase = "guaranteed returns"
    rule_code = factory.LazyAttribute(lambda m: m.rule.code)
    rule_set_version = factory.LazyAttribute(lambda m: m.rule.rule_set.version)
    claim_type = factory.LazyAttribute(lambda m: m.rule.claim_type)
    start = factory.LazyAttribute(lambda m: max(m.message.body.find(m.phrase), 0))
    end = factory.LazyAttribute(lambda m: m.start + len(m.phrase))
    text = factory.LazyAttribute(lambda m: m.message.body[m.start : m.end])


def word_attributions(body: str, hot_words: tuple[str, ...]) -> list[dict]:
    """Words of `body` with offsets; words in `hot_words` get a high score, others a small one."""
    hot = {w.lower() for w in hot_words}
    return [
        {
            "word": match.group(),
            "start": match.start(),
            "end": match.end(),
            "score": 0.8 if match.group().lower() in hot else 0.01,
        }
        for match in re.finditer(r"\w+", body)
    ]


class ExplanationFactory(factory.django.DjangoModelFactory):
    """An Integrated Gradients explanation of the message's routing prediction that passed its
    faithfulness check (use `passed=False` for one that failed, `status="failed"` for a failed
    computation)."""

    class Meta:
        model = Explanation
        exclude = ("hot_words",)

    message = factory.SubFactory(MessageFactory)
    prediction = factory.LazyAttribute(lambda e: e.message.routing_prediction)
    model_version = factory.LazyAttribute(lambda e: e.prediction.model_version)
    method = ExplanationMethod.INTEGRATED_GRADIENTS
    status = ExplanationStatus.OK
    hot_words = ("guaranteed", "returns")
    window_start = 0
    window_end = factory.LazyAttribute(lambda e: len(e.message.body))
    words = factory.LazyAttribute(lambda e: word_attributions(e.message.body, e.hot_words))
    top_words = factory.LazyAttribute(lambda e: [w for w in e.words if w["score"] >= 0.8])
    k = factory.LazyAttribute(lambda e: len(e.top_words))
    score_full = factory.LazyAttribute(lambda e: e.prediction.score)
    score_without_top = factory.LazyAttribute(lambda e: 0.12 if e.passed else e.prediction.score - 0.01)
    score_top_only = 0.7
    comprehensiveness = factory.LazyAttribute(lambda e: e.score_full - e.score_without_top)
    sufficiency = factory.LazyAttribute(lambda e: e.score_full - e.score_top_only)
    random_baseline = 0.02
    flipped = factory.LazyAttribute(lambda e: e.score_without_top < e.prediction.threshold)
    threshold = factory.LazyAttribute(lambda e: e.prediction.threshold)
    passed = True
    pass_rule = "passes when comprehensiveness >= 0.10 and at least twice the random baseline"
    n_steps = 32
    convergence_delta = -0.012
    precision = "bfloat16"
    verdict_text = factory.LazyAttribute(
        lambda e: (
            f"Removing the {e.k} highlighted words moves the score from {e.score_full:.2f} to "
            f"{e.score_without_top:.2f} (comprehensiveness {e.comprehensiveness:.2f}; "
            f"random words: {e.random_baseline:.2f})."
        )
    )


class AttentionDiagnosticFactory(factory.django.DjangoModelFactory):
    """Seeded softmax rows over `tokens` for every layer and head, stored in the real format."""

    class Meta:
        model = AttentionDiagnostic

    prediction = factory.SubFactory(PredictionFactory)
    tokens = factory.LazyFunction(lambda: ["[CLS]", "guaranteed", "returns", "of", "the", "fund", "[SEP]"])
    layers = 2
    heads = 2
    weights = factory.LazyAttribute(lambda a: encode_array(_softmax_rows(a.layers, a.heads, len(a.tokens))))
    rollout = factory.LazyAttribute(lambda a: encode_array(_softmax_rows(1, 1, len(a.tokens))[0, 0]))


def _softmax_rows(layers: int, heads: int, n: int, seed: int = 7) -> np.ndarray:
    logits = np.random.default_rng(seed).normal(size=(layers, heads, n, n))
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def reviewable_message(
    *,
    body: str = "Our fund offers guaranteed returns of 12% a year, every year.",
    score: float = 0.91,
    claim_code: str = "guaranteed_returns",
    model_version: ModelVersion | None = None,
    rule_phrase: str | None = "guaranteed returns",
    explanation: bool = True,
    attention: bool = False,
    qa_sample: bool = False,
    received_at=None,
    status: str = MessageStatus.IN_REVIEW,
    **message_fields,
) -> Message:
    """A message as the pipeline leaves it for review: scored by a model version, routed (with
    its queue score), with a rule match on `rule_phrase` when that phrase is in the body, an
    explanation that passed its check, and optionally an attention diagnostic."""
    now = timezone.now()
    message = MessageFactory(
        body=body,
        status=status,
        received_at=received_at or now,
        in_review_at=now,
        is_qa_sample=qa_sample,
        **message_fields,
    )
    version = model_version or ModelVersionFactory()
    prediction = PredictionFactory(
        message=message, model_version=version, score=score, claim_type=claim_type(claim_code)
    )
    has_rule = bool(rule_phrase) and rule_phrase.lower() in body.lower()
    if has_rule:
        RuleMatchFactory(message=message, phrase=rule_phrase, start=body.lower().find(rule_phrase.lower()))
    message.routing_prediction = prediction
    message.queue_score = score
    message.has_rule_hit = has_rule
    message.route_reason = "qa_sample" if qa_sample else ("model_and_rule" if has_rule else "model_flag")
    message.save()
    if explanation:
        ExplanationFactory(message=message, prediction=prediction)
    if attention:
        AttentionDiagnosticFactory(prediction=prediction)
    return message


class ReviewDecisionFactory(factory.Factory):
    """A decision recorded through `reviews.services.decision_record` (so the hash chain stays
    valid). On a message in review, the reviewer first claims it like in the product."""

    class Meta:
        model = ReviewDecision

    message = factory.LazyFunction(reviewable_message)
    reviewer = factory.SubFactory(UserFactory, role="reviewer")
    verdict = "claim"
    claim_type = factory.LazyAttribute(
        lambda d: claim_type("guaranteed_returns") if d.verdict == "claim" else None
    )
    note = ""
    escalation_reason = factory.LazyAttribute(
        lambda d: "Needs a second look" if d.verdict == "escalate" else ""
    )

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        from reviews.services import decision_record, lock_claim

        message, reviewer = kwargs["message"], kwargs["reviewer"]
        if message.status == MessageStatus.IN_REVIEW and kwargs.get("supersedes") is None:
            lock_claim(reviewer=reviewer, message=message)
        return decision_record(**kwargs)
