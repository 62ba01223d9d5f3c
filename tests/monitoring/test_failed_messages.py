"""Failed messages are seen and can be retried: the queue-health panel and /healthz (degraded)
count them, and the compliance admin's failed-messages page lists them with a "retry" that is
audited (who, when, why) and moves the message failed -> queued along the state machine."""

from __future__ import annotations

from unittest import mock

import pytest
from django.urls import reverse
from django.utils import timezone

from monitoring import selectors
from scoring.constants import MessageStatus
from scoring.models import Message, MessageRetry
from tests.factories import MessageFactory, ModelVersionFactory
from tests.monitoring.conftest import signed_in

pytestmark = pytest.mark.django_db

CRASHED = "scoring crashed or timed out its worker 5 times with this message alone; last: gpu0@box pid 41"


def failed(**fields) -> Message:
    return MessageFactory(
        status=MessageStatus.FAILED, failed_at=timezone.now(), status_reason=CRASHED, attempts=5, **fields
    )


def test_failed_messages_make_healthz_degraded_and_show_on_the_queue_panel(admin_client_, client):
    ModelVersionFactory(is_active=True)
    assert client.get("/healthz").json() == {"status": "healthy"}  # anonymous: the verdict only
    client = admin_client_  # the checks are for compliance admins
    healthy = client.get("/healthz").json()
    assert healthy["status"] == "healthy", healthy
    assert healthy["checks"]["failed_messages"] == {"ok": True, "degraded": False, "failed": 0}
    failed(), failed()

    response = client.get("/healthz")

    body = response.json()
    check = body["checks"]["failed_messages"]
    assert check["ok"] is True and check["degraded"] is True and check["failed"] == 2
    assert "/monitoring/failed/" in check["warning"]
    # degraded, not unhealthy: the service works, a person has something to do
    assert response.status_code == 200 and body["status"] == "degraded" and body["ok"] is True
    queue = selectors.queue_health()
    assert queue["failed"]["messages"] == 2 and queue["failed"]["url"] == reverse("monitoring:failed")


def test_the_failed_page_lists_each_message_with_its_reason(admin_user, django_assert_max_num_queries):
    messages = [failed(external_id=f"fail-{i}") for i in range(3)]
    client = signed_in(admin_user)

    with django_assert_max_num_queries(12):  # no N+1 over messages and their retries
        html = client.get(reverse("monitoring:failed")).content.decode()

    for message in messages:
        assert message.external_id in html
    assert "gpu0@box pid 41" in html and html.count('name="reason"') == 3


def test_a_retry_is_audited_and_sends_the_message_back_to_scoring(
    admin_user, django_capture_on_commit_callbacks
):
    message = failed(external_id="fail-retry")
    client = signed_in(admin_user)

    with (
        mock.patch("scoring.tasks.score_batch.apply_async") as publish,
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(
            reverse("monitoring:failed_retry", args=[message.pk]),
            {"reason": "the worker's GPU was replaced"},
            follow=True,
        )

    assert "queued for scoring again" in response.content.decode()
    message.refresh_from_db()
    assert message.status == MessageStatus.QUEUED and message.attempts == 0 and message.queued_at
    assert message.status_reason == f"retried by {admin_user.username}: the worker's GPU was replaced"
    (record,) = MessageRetry.objects.filter(message=message)
    assert (record.requested_by, record.reason) == (admin_user, "the worker's GPU was replaced")
    assert (record.previous_status, record.previous_reason) == (MessageStatus.FAILED, CRASHED)
    assert record.previous_attempts == 5
    assert record.requested_at is not None
    assert publish.call_args.kwargs["args"] == [[message.pk]]
    with pytest.raises(ValueError, match="never"):
        record.delete()


@pytest.mark.parametrize(
    ("status", "reason", "error"),
    [
        (MessageStatus.FAILED, "   ", "Say why"),
        (MessageStatus.IN_REVIEW, "try it", "Only a failed message can be retried"),
    ],
)
def test_a_retry_without_a_reason_or_of_a_message_that_is_not_failed_changes_nothing(
    admin_user, status, reason, error
):
    message = MessageFactory(status=status)
    client = signed_in(admin_user)

    with mock.patch("scoring.tasks.score_batch.apply_async") as publish:
        response = client.post(
            reverse("monitoring:failed_retry", args=[message.pk]), {"reason": reason}, follow=True
        )

    assert error in response.content.decode()
    assert Message.objects.get(pk=message.pk).status == status
    assert not MessageRetry.objects.exists() and not publish.called
