"""Reading messages through the API: detail, filters, cursor pagination, no N+1, roles."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from scoring.constants import MessageStatus
from tests.factories import MessageFactory, ModelVersionFactory, PredictionFactory, claim_type

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def routed(message, prediction):
    message.routing_prediction = prediction
    message.queue_score = prediction.score
    message.save()
    return message


@pytest.fixture
def version():
    return ModelVersionFactory(is_active=True, threshold=0.6)


def test_message_detail_shows_prediction_rule_matches_and_timestamps(reviewer, version):
    message = MessageFactory(body="Returns are guaranteed.", status=MessageStatus.IN_REVIEW)
    routed(message, PredictionFactory(message=message, model_version=version, score=0.93))

    body = client_for(reviewer).get(f"/api/messages/{message.pk}/").json()

    assert body["external_id"] == message.external_id
    assert body["body"] == "Returns are guaranteed."
    assert body["prediction"]["score"] == pytest.approx(0.93)
    assert body["prediction"]["threshold"] == pytest.approx(0.6)
    assert body["prediction"]["flagged"] is True
    assert body["prediction"]["model_version"] == version.name
    assert body["prediction"]["claim_type"] == "guaranteed_returns"
    assert body["rule_matches"] == [] and body["explanations"] == [] and body["decisions"] == []
    assert set(body["timestamps"]) >= {"queued_at", "scored_at", "in_review_at", "decided_at"}


def test_the_list_filters_by_status_flag_claim_type_and_date(auditor, version):
    old = timezone.now() - timedelta(days=10)
    flagged = MessageFactory(status=MessageStatus.IN_REVIEW)
    routed(flagged, PredictionFactory(message=flagged, model_version=version, score=0.9))
    cleared = MessageFactory(status=MessageStatus.CLEARED, received_at=old)
    routed(
        cleared,
        PredictionFactory(
            message=cleared, model_version=version, score=0.1, claim_type=claim_type("risk_free")
        ),
    )
    api = client_for(auditor)

    def ids(query: str) -> list[int]:
        return [row["id"] for row in api.get(f"/api/messages/?{query}").json()["results"]]

    assert ids("status=in_review") == [flagged.pk]
    assert ids("flagged=false") == [cleared.pk]
    assert ids("claim_type=risk_free") == [cleared.pk]
    assert ids(f"received_before={(old + timedelta(days=1)).isoformat()}".replace("+", "%2B")) == [cleared.pk]
    assert set(ids("")) == {flagged.pk, cleared.pk}


def test_an_invalid_filter_value_is_a_400_not_an_empty_list(auditor):
    response = client_for(auditor).get("/api/messages/?status=nonsense")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"


def test_the_list_is_cursor_paginated_without_duplicates_or_gaps(auditor):
    created = MessageFactory.create_batch(7)
    api = client_for(auditor)
    seen: list[int] = []
    url = "/api/messages/?page_size=3"
    while url:
        page = api.get(url).json()
        seen += [row["id"] for row in page["results"]]
        url = page["next"]

    assert seen == sorted((m.pk for m in created), reverse=True)


def test_the_list_query_count_does_not_grow_with_the_page(auditor, version, django_assert_max_num_queries):
    for _ in range(30):
        message = MessageFactory()
        routed(message, PredictionFactory(message=message, model_version=version))
    api = client_for(auditor)

    with django_assert_max_num_queries(6):
        response = api.get("/api/messages/?page_size=30")

    assert len(response.json()["results"]) == 30


def test_the_detail_query_count_is_bounded(reviewer, version, django_assert_max_num_queries):
    message = MessageFactory()
    routed(message, PredictionFactory(message=message, model_version=version))
    api = client_for(reviewer)

    with django_assert_max_num_queries(10):
        assert api.get(f"/api/messages/{message.pk}/").status_code == 200


def test_an_outsider_without_a_role_cannot_read_messages(outsider):
    message = MessageFactory()

    assert client_for(outsider).get(f"/api/messages/{message.pk}/").status_code == 403
    assert client_for(outsider).get("/api/messages/").status_code == 403


def test_anonymous_requests_are_401():
    assert APIClient().get("/api/messages/").status_code == 401


def test_decision_records_in_the_detail_follow_the_role_table(reviewer, auditor, admin_user, service_account):
    from tests.factories import ReviewDecisionFactory

    mine = ReviewDecisionFactory(reviewer=reviewer, verdict="escalate")
    message = mine.message
    theirs = ReviewDecisionFactory(message=message, reviewer=admin_user, verdict="no_claim")

    def decision_ids(user) -> list[int]:
        response = client_for(user).get(f"/api/messages/{message.pk}/")
        assert response.status_code == 200
        return sorted(d["id"] for d in response.json()["decisions"])

    assert decision_ids(auditor) == decision_ids(admin_user) == sorted([mine.pk, theirs.pk])
    assert decision_ids(reviewer) == [mine.pk]  # their own, not the admin's second-level decision
    # the ingest service reads no message at all, records least of all (its feed's status only)
    assert client_for(service_account).get(f"/api/messages/{message.pk}/").status_code == 403


def test_a_date_filter_with_any_iso_offset_is_compared_in_utc(auditor):
    message = MessageFactory(received_at=timezone.now() - timedelta(days=1))
    api = client_for(auditor)

    # -18:24 is valid ISO 8601 and beyond what PostgreSQL accepts as an offset (found by schemathesis)
    response = api.get("/api/messages/", {"received_after": "2000-02-28T05:05:40-18:24"})

    assert response.status_code == 200
    assert [row["id"] for row in response.json()["results"]] == [message.pk]
    assert api.get("/api/messages/", {"received_after": ""}).status_code == 400
