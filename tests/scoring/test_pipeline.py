"""The scoring step in process: routing, failures, idempotency, the sweeper (tiny real model)."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.test import override_settings
from django.utils import timezone

from scoring import routing
from scoring.constants import MessageStatus
from scoring.errors import InvalidTransition, ModelNotReady
from scoring.models import Message, ModelVersion, Prediction, RuleMatch, RuleSet
from scoring.services.ingest import IncomingMessage, message_ingest, messages_ingest_bulk
from scoring.services.pipeline import messages_score_batch
from scoring.services.queueing import (
    messages_enqueue_scoring,
    messages_gather,
    messages_request_gather,
    messages_sweep,
)
from scoring.services.transitions import path_fields
from scoring.tasks import score_batch
from tests.factories import MessageFactory

pytestmark = pytest.mark.django_db

NEUTRAL = "Lunch is at noon in the main meeting room, see you there."
RULE_HIT = "Good news: your returns are guaranteed with this fund."


def with_threshold(version: ModelVersion, threshold: float) -> ModelVersion:
    # Test-only: the product never edits a threshold in place (a new version shares the artifact).
    ModelVersion.objects.filter(pk=version.pk).update(threshold=threshold)
    version.refresh_from_db()
    return version


def queued(body: str, **fields) -> Message:
    return MessageFactory(body=body, status=MessageStatus.QUEUED, queued_at=timezone.now(), **fields)


# --- pure routing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "rule_hit", "qa", "unread", "reason", "explain", "review"),
    [
        (0.9, True, False, False, routing.MODEL_AND_RULE, True, True),
        (0.9, False, True, False, routing.MODEL_FLAG, True, True),
        (0.1, True, False, False, routing.RULE_HIT, True, True),
        (0.1, False, True, False, routing.QA_SAMPLE, False, True),
        (0.1, False, False, False, routing.CLEARED, False, False),
        (0.5, False, False, False, routing.MODEL_FLAG, True, True),  # the threshold itself flags
        # a part that could not be read: nothing in it was checked, so a person looks
        (0.1, False, False, True, routing.UNREAD_PART, False, True),
        (0.1, False, True, True, routing.UNREAD_PART, False, True),  # before the draw: not a sample
        (0.9, False, False, True, routing.MODEL_FLAG, True, True),
        (0.1, True, False, True, routing.RULE_HIT, True, True),
    ],
)
def test_routing_follows_the_brief(score, rule_hit, qa, unread, reason, explain, review):
    decided = routing.route(score=score, threshold=0.5, rule_hit=rule_hit, qa_sample=qa, unread_part=unread)

    assert (decided.reason, decided.needs_explanation, decided.to_review) == (reason, explain, review)
    assert decided.is_qa_sample == (reason == routing.QA_SAMPLE)


def test_the_qa_draw_is_deterministic_per_message_and_close_to_its_rate():
    draws = [routing.is_qa_sample(f"m-{i}", rate=0.02, salt="s") for i in range(20_000)]

    assert draws == [routing.is_qa_sample(f"m-{i}", rate=0.02, salt="s") for i in range(20_000)]
    assert 0.015 < sum(draws) / len(draws) < 0.025
    assert not any(routing.is_qa_sample(f"m-{i}", rate=0.0, salt="s") for i in range(100))


# --- the scoring step ---------------------------------------------------------------------------


def test_a_batch_is_scored_matched_and_routed(tiny_model_version, django_capture_on_commit_callbacks):
    with_threshold(tiny_model_version, 1.0)  # nothing flagged by the model: rules and QA decide
    hit, plain = queued(RULE_HIT), queued(NEUTRAL)

    outcomes = []

    def score_in_process(*, message_ids, claimant):  # the task's service, without a heartbeat thread
        outcomes.append(messages_score_batch(message_ids=message_ids))
        return outcomes[-1]

    with (
        override_settings(QA_SAMPLE_RATE=0.0, SCORING_DEVICE="cpu"),
        mock.patch("scoring.services.pipeline.messages_score_batch", side_effect=score_in_process),
        mock.patch("explanations.services.queueing.messages_enqueue_explanation") as enqueue_explain,
        django_capture_on_commit_callbacks(execute=True),
    ):
        score_batch.apply(args=[[hit.pk, plain.pk]]).get()
    (outcome,) = outcomes

    hit.refresh_from_db()
    plain.refresh_from_db()
    assert (outcome.scored, outcome.failed, outcome.to_explain) == (2, 0, [hit.pk])
    assert hit.status == MessageStatus.SCORED and hit.route_reason == routing.RULE_HIT
    assert plain.status == MessageStatus.CLEARED and plain.cleared_at is not None
    enqueue_explain.assert_called_once_with(message_ids=[hit.pk])
    prediction = Prediction.objects.get(message=hit)
    assert hit.routing_prediction == prediction and hit.queue_score == prediction.score
    assert prediction.threshold == 1.0 and prediction.flagged is False
    assert set(prediction.probabilities) == set(tiny_model_version.labels)
    assert prediction.window_scores and prediction.window_scores[0]["start"] == 0
    match = RuleMatch.objects.get(message=hit)
    assert RULE_HIT[match.start : match.end].lower() == match.text.lower()
    assert (
        match.claim_type.code == "guaranteed_returns"
        and match.rule_set_version == RuleSet.objects.get(is_active=True).version
    )


def test_a_score_at_or_above_the_threshold_flags_and_asks_for_an_explanation(tiny_model_version):
    with_threshold(tiny_model_version, 0.0)
    message = queued(NEUTRAL)

    with mock.patch("explanations.services.queueing.messages_enqueue_explanation"):
        messages_score_batch(message_ids=[message.pk])

    message.refresh_from_db()
    assert message.status == MessageStatus.SCORED
    assert message.route_reason == routing.MODEL_FLAG
    assert message.routing_prediction.flagged is True


def test_a_qa_sample_below_threshold_goes_to_review_marked_as_a_sample(tiny_model_version):
    with_threshold(tiny_model_version, 1.0)
    message = queued(NEUTRAL)

    with override_settings(QA_SAMPLE_RATE=1.0):
        messages_score_batch(message_ids=[message.pk])

    message.refresh_from_db()
    assert message.status == MessageStatus.IN_REVIEW and message.is_qa_sample
    assert message.route_reason == routing.QA_SAMPLE and message.in_review_at is not None


def test_a_message_with_a_part_that_could_not_be_read_goes_to_review_though_nothing_flags_it(
    tiny_model_version,
):
    with_threshold(tiny_model_version, 1.0)
    attachments = [
        {
            "name": "terms.txt",
            "content_type": "text/plain",
            "size": 30,
            "scored": False,
            "note": "not scored: x",
        }
    ]
    read_whole = queued(NEUTRAL, attachments=attachments)
    not_read_whole = queued(NEUTRAL, attachments=[{**attachments[0], "unreadable": True}])

    with override_settings(QA_SAMPLE_RATE=0.0):
        outcome = messages_score_batch(message_ids=[read_whole.pk, not_read_whole.pk])

    read_whole.refresh_from_db()
    not_read_whole.refresh_from_db()
    assert (read_whole.status, read_whole.route_reason) == (MessageStatus.CLEARED, routing.CLEARED)
    assert not_read_whole.status == MessageStatus.IN_REVIEW and not not_read_whole.is_qa_sample
    assert not_read_whole.route_reason == routing.UNREAD_PART and not_read_whole.in_review_at is not None
    assert list(outcome.to_explain) == []  # nothing flagged it, so there is nothing to explain
    assert not_read_whole.get_route_reason_display() == "Below threshold, but a part of it could not be read"


def test_a_message_the_scorer_refuses_fails_alone_with_its_reason(tiny_model_version):
    with_threshold(tiny_model_version, 1.0)
    bad, good = queued(" \n\t "), queued(NEUTRAL)

    with override_settings(QA_SAMPLE_RATE=0.0):
        outcome = messages_score_batch(message_ids=[bad.pk, good.pk])

    bad.refresh_from_db()
    good.refresh_from_db()
    assert (outcome.scored, outcome.failed) == (1, 1)
    assert bad.status == MessageStatus.FAILED and "nothing to score" in bad.status_reason
    assert good.status == MessageStatus.CLEARED
    assert not Prediction.objects.filter(message=bad).exists()


def test_scoring_the_same_batch_twice_writes_nothing_the_second_time(tiny_model_version):
    messages = [queued(f"{NEUTRAL} ({i})") for i in range(5)]
    ids = [m.pk for m in messages]

    with mock.patch("explanations.services.queueing.messages_enqueue_explanation"):
        first = messages_score_batch(message_ids=ids)
        second = messages_score_batch(message_ids=ids)

    assert first.scored == 5
    assert (second.scored, second.failed, second.skipped) == (0, 0, 5)
    assert Prediction.objects.filter(message_id__in=ids).count() == 5


def test_without_an_active_model_scoring_raises_model_not_ready_and_changes_nothing():
    message = queued(NEUTRAL)

    with pytest.raises(ModelNotReady, match="activate_model"):
        messages_score_batch(message_ids=[message.pk])

    message.refresh_from_db()
    assert message.status == MessageStatus.QUEUED and message.attempts == 0


# --- enqueueing and the sweeper -------------------------------------------------------------------


def test_enqueueing_marks_messages_queued_only_after_a_successful_publish():
    messages = MessageFactory.create_batch(3)

    with mock.patch("scoring.tasks.score_batch.apply_async", side_effect=ConnectionError("broker down")):
        assert messages_enqueue_scoring(message_ids=[m.pk for m in messages]) == 0
    assert set(Message.objects.values_list("status", flat=True)) == {MessageStatus.RECEIVED}

    with mock.patch("scoring.tasks.score_batch.apply_async") as publish:
        assert messages_enqueue_scoring(message_ids=[m.pk for m in messages]) == 3
    publish.assert_called_once()
    assert set(Message.objects.values_list("status", flat=True)) == {MessageStatus.QUEUED}


@override_settings(SCORING_BATCH_SIZE=2)
def test_enqueueing_splits_ids_into_batches():
    messages = MessageFactory.create_batch(5)

    with mock.patch("scoring.tasks.score_batch.apply_async") as publish:
        messages_enqueue_scoring(message_ids=[m.pk for m in messages])

    assert [len(call.kwargs["args"][0]) for call in publish.call_args_list] == [2, 2, 1]


@override_settings(STUCK_AFTER_SECONDS=60)
def test_the_sweeper_queues_what_is_received_requeues_what_is_stuck_and_leaves_fresh_work_alone():
    now = timezone.now()
    received = MessageFactory()
    stuck = queued(NEUTRAL)
    Message.objects.filter(pk=stuck.pk).update(queued_at=now - timedelta(minutes=5))
    fresh_queued = queued(NEUTRAL)
    fresh_queued_at = Message.objects.get(pk=fresh_queued.pk).queued_at

    with (
        mock.patch("scoring.tasks.score_batch.apply_async") as publish,
        mock.patch("explanations.tasks.explain_batch.apply_async"),
    ):
        result = messages_sweep(now=now)

    published = sorted(i for call in publish.call_args_list for i in call.kwargs["args"][0])
    assert published == sorted([received.pk, stuck.pk])
    assert (result.received_enqueued, result.stuck_requeued) == (1, 1)
    assert Message.objects.get(pk=received.pk).status == MessageStatus.QUEUED
    assert Message.objects.get(pk=fresh_queued.pk).queued_at == fresh_queued_at, "fresh work is left alone"
    assert Message.objects.get(pk=stuck.pk).status == MessageStatus.QUEUED, "waiting is never a failure"


# --- single messages and the gatherer ------------------------------------------------------------


@override_settings(GATHER_DELAY_SECONDS=0.5)
def test_single_messages_are_stored_received_and_request_one_delayed_gather_between_them(
    django_capture_on_commit_callbacks,
):
    with (
        mock.patch("scoring.tasks.score_batch.apply_async") as publish_scoring,
        mock.patch("scoring.tasks.gather.apply_async") as publish_gather,
        django_capture_on_commit_callbacks(execute=True),
    ):
        first = message_ingest(item=IncomingMessage(external_id="one", body=NEUTRAL))
        second = message_ingest(item=IncomingMessage(external_id="two", body=NEUTRAL + " 2"))

    assert first.message.status == second.message.status == MessageStatus.RECEIVED
    publish_scoring.assert_not_called()
    publish_gather.assert_called_once()
    assert publish_gather.call_args.kwargs["countdown"] == 0.5


@override_settings(GATHER_DELAY_SECONDS=0.0)
def test_a_gather_is_requested_again_once_the_pending_one_is_due():
    with mock.patch("scoring.tasks.gather.apply_async") as publish_gather:
        assert messages_request_gather() is True
        assert messages_request_gather() is True

    assert publish_gather.call_count == 2


def test_a_gather_request_the_broker_refuses_is_not_remembered_as_pending():
    with mock.patch("scoring.tasks.gather.apply_async", side_effect=ConnectionError("broker down")):
        assert messages_request_gather() is False
    with mock.patch("scoring.tasks.gather.apply_async") as publish_gather:
        assert messages_request_gather() is True, "the next single message tries again"

    publish_gather.assert_called_once()


@override_settings(SCORING_BATCH_SIZE=256)
def test_a_bulk_request_publishes_its_batch_when_it_commits(django_capture_on_commit_callbacks):
    items = [IncomingMessage(external_id=f"b-{i}", body=f"{NEUTRAL} {i}") for i in range(3)]

    with (
        mock.patch("scoring.tasks.score_batch.apply_async") as publish,
        django_capture_on_commit_callbacks(execute=True),
    ):
        results = messages_ingest_bulk(items=items)

    ids = sorted(r.message.pk for r in results)
    assert [sorted(call.kwargs["args"][0]) for call in publish.call_args_list] == [ids]
    assert set(Message.objects.filter(id__in=ids).values_list("status", flat=True)) == {MessageStatus.QUEUED}


@override_settings(SCORING_BATCH_SIZE=2)
def test_the_gatherer_batches_the_waiting_single_messages_and_queues_them_once():
    waiting = MessageFactory.create_batch(5)
    already_queued = queued(NEUTRAL)

    with mock.patch("scoring.tasks.score_batch.apply_async") as publish:
        assert messages_gather() == 5
        assert messages_gather() == 0, "a second tick finds nothing left to gather"

    batches = [call.kwargs["args"][0] for call in publish.call_args_list]
    assert batches == [[m.pk for m in waiting[:2]], [m.pk for m in waiting[2:4]], [waiting[4].pk]]
    assert all(call.kwargs["queue"] == "gpu" for call in publish.call_args_list)
    rows = Message.objects.filter(id__in=[m.pk for m in waiting])
    assert set(rows.values_list("status", flat=True)) == {MessageStatus.QUEUED}
    assert not rows.filter(queued_at=None).exists()
    assert already_queued.pk not in {i for batch in batches for i in batch}


def test_the_gatherer_leaves_messages_received_while_the_broker_is_down():
    waiting = MessageFactory.create_batch(3)

    with mock.patch("scoring.tasks.score_batch.apply_async", side_effect=ConnectionError("broker down")):
        assert messages_gather() == 0

    assert set(Message.objects.filter(id__in=[m.pk for m in waiting]).values_list("status", flat=True)) == {
        MessageStatus.RECEIVED
    }


# --- the state machine in the scoring batch ------------------------------------------------------


def test_a_message_scored_straight_from_received_passes_through_queued_and_scored(tiny_model_version):
    # A task can be published while its claim fails to commit (the message stays received).
    with_threshold(tiny_model_version, 1.0)
    message = MessageFactory(body=NEUTRAL)

    with override_settings(QA_SAMPLE_RATE=0.0):
        messages_score_batch(message_ids=[message.pk])

    message.refresh_from_db()
    assert message.status == MessageStatus.CLEARED
    assert message.queued_at and message.scored_at and message.cleared_at
    assert message.queued_at <= message.scored_at <= message.cleared_at


def test_the_path_of_a_move_is_checked_step_by_step_against_the_state_machine():
    now = timezone.now()

    fields = path_fields(
        from_status=MessageStatus.QUEUED, path=[MessageStatus.SCORED, MessageStatus.IN_REVIEW], now=now
    )

    assert fields == {"scored_at": now, "in_review_at": now, "status": MessageStatus.IN_REVIEW}
    with pytest.raises(InvalidTransition, match="from received to scored"):
        path_fields(from_status=MessageStatus.RECEIVED, path=[MessageStatus.SCORED], now=now)
    with pytest.raises(InvalidTransition, match="from cleared to scored"):
        path_fields(from_status=MessageStatus.CLEARED, path=[MessageStatus.SCORED], now=now)
