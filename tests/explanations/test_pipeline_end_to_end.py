"""The whole pipeline with real parts: the API, a real redis-server, a real Celery worker process,
the test database and the tiny trained transformer. A flagged message goes received -> queued ->
scored -> explained -> in_review, and the API shows its checked explanations."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from explanations.faithfulness import IG_DELTA_TOLERANCE
from scoring.constants import MessageStatus
from scoring.models import Message
from tests.conftest import require_or_skip
from tests.factories import UserFactory
from tests.support.services import CeleryWorker, RedisServer, broker, wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]

CLAIM = "Your returns are guaranteed at 12 percent every year."
NEUTRAL = "Lunch is at 12 o'clock in the main meeting room."


@pytest.fixture
def redis_server():
    require_or_skip(RedisServer.available(), "redis-server", "CLAIMWATCH_REQUIRE_SERVICES")
    server = RedisServer().start()
    yield server
    server.stop()


def test_a_flagged_message_reaches_review_with_its_explanation(
    seeded_transactional_db, tiny_model_version, redis_server
):
    ingest = APIClient()
    ingest.force_authenticate(UserFactory(username="ingest_bot", role="ingest_service"))
    worker = CeleryWorker(
        broker_url=redis_server.url(), name="explain-e2e", IG_N_STEPS="8", QA_SAMPLE_RATE="0"
    ).start()
    try:
        with broker(redis_server.url()):
            response = ingest.post(
                "/api/messages/bulk/",
                {
                    "messages": [
                        {"external_id": "e2e-claim", "body": CLAIM},
                        {"external_id": "e2e-lunch", "body": NEUTRAL},
                    ]
                },
                format="json",
            )
            assert response.status_code == 202, response.content
            claim_id, lunch_id = (row["id"] for row in response.json()["results"])
            wait_until(
                lambda: Message.objects.get(pk=claim_id).status == MessageStatus.IN_REVIEW,
                timeout=180,
                what="the flagged message to reach review",
            )
    finally:
        worker.stop()

    message = Message.objects.get(pk=claim_id)
    for stamp in ("queued_at", "scored_at", "explained_at", "in_review_at"):
        assert getattr(message, stamp) is not None, stamp
    assert message.queued_at <= message.scored_at <= message.explained_at <= message.in_review_at
    reviewer = APIClient()
    reviewer.force_authenticate(UserFactory(username="rita_reviewer", role="reviewer"))
    data = reviewer.get(f"/api/messages/{claim_id}/").json()
    assert data["status"] == "in_review"
    methods = {e["method"]: e for e in data["explanations"]}
    assert set(methods) == {"integrated_gradients", "occlusion"}
    ig = methods["integrated_gradients"]
    assert ig["status"] == "ok" and ig["verdict_text"] and ig["passed"] is not None
    # 8 steps, refined to 16 or 32 (IG_REFINE_DOUBLINGS=2) when they left it unconverged
    assert ig["n_steps"] in (8, 16, 32) and ig["precision"] in ("float32", "bfloat16")
    assert abs(ig["convergence_delta"]) <= IG_DELTA_TOLERANCE or ig["n_steps"] == 32
    assert all(CLAIM[w["start"] : w["end"]] == w["word"] for w in ig["words"])
    # the neutral message was cleared without an explanation
    lunch = reviewer.get(f"/api/messages/{lunch_id}/").json()
    assert lunch["status"] == "cleared" and lunch["explanations"] == []
