"""Concurrency: the same external_id posted from several threads at once becomes exactly one
message, two bulk imports of overlapping messages store and publish each message once, and two
publishers (a bulk commit and a gather) never both publish one message. Real threads with their
own connections, on PostgreSQL and on SQLite (a file there, as in `make run`)."""

from __future__ import annotations

import threading
from unittest import mock

import pytest
from django.db import connection
from rest_framework.test import APIClient

from scoring.constants import MessageStatus
from scoring.models import Message
from scoring.services.ingest import IncomingMessage, messages_ingest_bulk
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
def test_two_bulk_imports_of_overlapping_messages_store_and_publish_each_message_once():
    service = UserFactory(username="ingest_bot", role="ingest_service")
    shared = [IncomingMessage(external_id=f"both-{i}", body=f"Shared message {i}.") for i in range(20)]
    batches = [
        shared + [IncomingMessage(external_id=f"{name}-{i}", body=f"Only {name} {i}.") for i in range(10)]
        for name in ("first", "second")
    ]
    barrier = threading.Barrier(len(batches))
    outcomes: list[list[str]] = []
    errors: list[BaseException] = []
    published: list[int] = []
    lock = threading.Lock()

    def record_publish(*, args, **_):
        with lock:
            published.extend(args[0])

    def bulk_import(items) -> None:
        try:
            barrier.wait()
            results = messages_ingest_bulk(items=items, submitted_by=service)
            with lock:
                outcomes.append([result.status for result in results])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    with mock.patch("scoring.tasks.score_batch.apply_async", side_effect=record_publish):
        threads = [threading.Thread(target=bulk_import, args=(items,)) for items in batches]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)

    assert not errors
    # every item is stored or recognised as already stored, never an error
    assert all(status in {"created", "duplicate"} for statuses in outcomes for status in statuses)
    assert sum(statuses.count("created") for statuses in outcomes) == 40
    assert Message.objects.count() == 40
    ids = set(Message.objects.values_list("id", flat=True))
    # each new message is published for scoring exactly once, by the import that created it
    assert sorted(published) == sorted(ids)


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
