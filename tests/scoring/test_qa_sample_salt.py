"""The QA sample is drawn with a secret of its own (QA_SAMPLE_SALT), not SECRET_KEY: whoever knows
the session key cannot choose external ids that are never sampled."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.utils import timezone

from scoring import routing
from scoring.constants import MessageStatus
from scoring.models import Message, ModelVersion
from scoring.services.pipeline import messages_score_batch
from tests.factories import MessageFactory

pytestmark = pytest.mark.django_db
RATE = 0.5
IDS = [f"qa-{i}" for i in range(16)]


def sampled_with(salt: str) -> set[str]:
    return {key for key in IDS if routing.is_qa_sample(key, rate=RATE, salt=salt)}


def test_the_qa_sample_is_drawn_with_its_own_salt_not_the_secret_key(tiny_model_version):
    ModelVersion.objects.filter(pk=tiny_model_version.pk).update(threshold=1.0)  # nothing flagged
    salt, key = "a-salt-of-its-own", "the-session-key"
    assert sampled_with(salt) != sampled_with(key)  # the two draws tell the salts apart
    ids = [
        MessageFactory(external_id=external_id, body="Lunch is at noon.", status=MessageStatus.QUEUED,
                       queued_at=timezone.now()).pk
        for external_id in IDS
    ]  # fmt: skip

    with override_settings(QA_SAMPLE_RATE=RATE, QA_SAMPLE_SALT=salt, SECRET_KEY=key):
        messages_score_batch(message_ids=ids)

    sampled = set(Message.objects.filter(is_qa_sample=True).values_list("external_id", flat=True))
    assert sampled == sampled_with(salt)
