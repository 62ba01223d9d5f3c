"""Concurrency: the same external_id posted from several threads at once becomes exactly one
message, and two publishers (a bulk commit and a gather) never both publish one message."""

from __future__ import annotations

import threading
from unittest import mock

import pytest
from django.db import connection
from rest_framework.test import APIClient

from scoring.constants import MessageStatus
from scoring.models import Message
from scoring.services.queueing import messages_enqueue_scoring
from tests.factories import MessageFactory, UserFactory

N_THREADS = 8


@pytest.mark.usefixtures("seeded_transactional_db")
def test_concurrent_posts_of_one_external_id_create_one_message():
    service = UserFactory(username="ingest_bot", role="ingest_service")
    barrier = threading.Barrier(N_THREADS)
    statuses: list[int] = []
    ids: set[int] = set()
    lock = threading.Lock()

    def post() -> None:
        client = APIClient()
        client.force_authenticate(service)
        barrier.wait()
        try:
            response = client.post(
                "/api/messages/", {"external_id": "same-1", "body": "Returns are guaranteed."}, format="json"
            )
            with lock:
                statuses.append(response.status_code)
                ids.add(response.json()["id"])
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(N_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert Message.objects.filter(external_id="same-1").count() == 1
    assert sorted(statuses) == [200] * (N_THREADS - 1) + [202]
    assert len(ids) == 1


@pytest.mark.usefixtures("seeded_transactional_db")
def test_messages_one_publisher_is_publishing_are_skipped_by_another():
    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip("row locks with SKIP LOCKED (PostgreSQL) make the claim exclusive")
    ids = [m.pk for m in MessageFactory.create_batch(3)]
    holding, release = threading.Event(), threading.Event()
    published: list[tuple[str, list[int]]] = []

    def publish(*, args, **_):
        published.append((threading.current_thread().name, args[0]))
        if threading.current_thread().name == "first":
            holding.set()  # the first publisher holds its row locks until released
            release.wait(10)

    first_result: list[int] = []

    def first() -> None:
        try:
            first_result.append(messages_enqueue_scoring(message_ids=ids))
        finally:
            connection.close()

    with mock.patch("scoring.tasks.score_batch.apply_async", side_effect=publish):
        thread = threading.Thread(target=first, name="first")
        thread.start()
        assert holding.wait(10), "the first publisher never published"
        # when: a second publisher (a gather) runs while the first holds the messages
        second_result = messages_enqueue_scoring(message_ids=ids)
        release.set()
        thread.join(10)

    assert (first_result, second_result) == ([3], 0)
    assert published == [("first", ids)]
    assert set(Message.objects.filter(id__in=ids).values_list("status", flat=True)) == {MessageStatus.QUEUED}
