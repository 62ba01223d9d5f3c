"""A challenger in shadow scores the same traffic, stores shadow predictions, routes nothing."""

from __future__ import annotations

from unittest import mock

import pytest
from django.utils import timezone

from governance.services.model_versions import model_version_with_threshold
from governance.services.shadow import model_version_set_shadow
from scoring.constants import MessageStatus
from scoring.errors import ModelVersionError
from scoring.models import Message, Prediction
from scoring.services.pipeline import messages_score_batch
from scoring.services.shadow import messages_shadow_score, shadow_sweep
from tests.factories import MessageFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def challenger(tiny_model_version):
    variant = model_version_with_threshold(
        version=tiny_model_version, threshold=0.0, reason="challenger for test"
    )
    return model_version_set_shadow(version=variant, enabled=True)


def test_the_active_version_cannot_be_put_in_shadow(tiny_model_version):
    with pytest.raises(ModelVersionError, match="active"):
        model_version_set_shadow(version=tiny_model_version, enabled=True)


def test_scoring_publishes_shadow_work_after_commit_and_the_shadow_routes_nothing(
    tiny_model_version, challenger, django_capture_on_commit_callbacks
):
    message = MessageFactory(body="Lunch at noon, see you there.", status=MessageStatus.QUEUED)

    with (
        mock.patch("scoring.services.shadow.messages_enqueue_shadow") as enqueue_shadow,
        mock.patch("explanations.services.queueing.messages_enqueue_explanation"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        messages_score_batch(message_ids=[message.pk])
    enqueue_shadow.assert_called_once_with(message_ids=[message.pk])
    routed_status = Message.objects.get(pk=message.pk).status

    written = messages_shadow_score(message_ids=[message.pk], version_id=challenger.pk)

    shadow = Prediction.objects.get(message=message, model_version=challenger)
    assert written == 1 and shadow.is_shadow and shadow.flagged  # threshold 0.0 flags everything
    message.refresh_from_db()
    assert message.status == routed_status, "a shadow prediction changes no routing"
    assert message.routing_prediction.model_version == tiny_model_version
    assert messages_shadow_score(message_ids=[message.pk], version_id=challenger.pk) == 0, "idempotent"


def test_a_version_taken_out_of_shadow_scores_nothing(challenger):
    message = MessageFactory(status=MessageStatus.CLEARED)
    model_version_set_shadow(version=challenger, enabled=False)

    assert messages_shadow_score(message_ids=[message.pk], version_id=challenger.pk) == 0
    assert not Prediction.objects.filter(model_version=challenger).exists()


def test_the_sweeper_fills_in_shadow_predictions_a_broker_outage_left_out(challenger, settings):
    settings.STUCK_AFTER_SECONDS = 0
    missing = MessageFactory(status=MessageStatus.CLEARED)
    not_scored_yet = MessageFactory(status=MessageStatus.QUEUED)

    with mock.patch("scoring.tasks.shadow_score_batch.apply_async") as publish:
        published = shadow_sweep(now=timezone.now() + timezone.timedelta(seconds=1))

    assert published == 1
    assert publish.call_args.kwargs["args"] == [[missing.pk], challenger.pk]
    assert not_scored_yet.pk not in publish.call_args.kwargs["args"][0]
