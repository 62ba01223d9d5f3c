"""The same external_id posted from several threads at once becomes exactly one message."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from scoring.models import Message
from tests.factories import UserFactory

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
