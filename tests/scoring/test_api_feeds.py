"""Least privilege for ingest tokens: a feed reads the status of the messages it submitted and
nothing else (no body, score, rule match, explanation or decision; no other feed's message), and
its external ids are its own: another feed's ids neither collide with nor show through a 409."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from core.roles import Role
from reviews.tokens import api_token_issue
from scoring.constants import MessageStatus
from scoring.models import Message
from tests.factories import MessageFactory, UserFactory, reviewable_message

pytestmark = pytest.mark.django_db

BODY = "Our fund guarantees 12% returns every year."


def feed(name: str) -> APIClient:
    client = APIClient()
    client.account = UserFactory(username=name, role=Role.INGEST_SERVICE)
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(user=client.account).token}")
    return client


def post(client: APIClient, external_id: str, body: str = BODY):
    return client.post("/api/messages/", {"external_id": external_id, "body": body}, format="json")


def test_an_ingest_token_cannot_read_messages_predictions_or_explanations():
    message = reviewable_message()
    bot = feed("feed_a")

    assert bot.get("/api/messages/").status_code == 403
    assert bot.get(f"/api/messages/{message.pk}/").status_code == 403
    assert bot.get("/api/messages/?flagged=true").status_code == 403


def test_a_feed_reads_the_status_of_its_own_message_and_nothing_of_what_was_made_of_it():
    bot = feed("feed_a")
    accepted = post(bot, "a-1").json()
    Message.objects.filter(pk=accepted["id"]).update(status=MessageStatus.IN_REVIEW)

    response = bot.get(accepted["url"])

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"id", "external_id", "status", "url", "received_at", "created_at"}
    # in review and cleared alike read "processed": the status is no oracle of the model.
    assert body["status"] == "processed"
    again = post(bot, "a-1")
    assert again.status_code == 200 and again.json()["status"] == "processed"


def test_a_feed_cannot_see_another_feeds_message_even_by_id():
    mine, theirs = feed("feed_a"), feed("feed_b")
    their_message = post(theirs, "b-1").json()
    post(mine, "a-1")

    assert mine.get(f"/api/messages/{their_message['id']}/status/").status_code == 404
    listed = mine.get("/api/messages/status/").json()["results"]
    assert [row["external_id"] for row in listed] == ["a-1"]
    assert mine.get("/api/messages/status/?external_id=b-1").json()["results"] == []


def test_two_feeds_may_use_the_same_external_id_and_a_409_comes_only_from_your_own_feed():
    mine, theirs = feed("feed_a"), feed("feed_b")
    assert post(theirs, "same-id", body="Their text.").status_code == 202

    created = post(mine, "same-id", body="My text.")
    conflict = post(mine, "same-id", body="My other text.")

    assert created.status_code == 202
    assert conflict.status_code == 409
    assert "Their text" not in conflict.content.decode()
    assert Message.objects.filter(external_id="same-id").count() == 2
    assert Message.objects.get(external_id="same-id", submitted_by=theirs.account).body == "Their text."


def test_bulk_ingest_resolves_duplicates_within_the_feed_only():
    mine, theirs = feed("feed_a"), feed("feed_b")
    post(theirs, "x-1")

    response = mine.post(
        "/api/messages/bulk/", {"messages": [{"external_id": "x-1", "body": BODY}]}, format="json"
    )

    assert response.status_code == 202
    assert [r["result"] for r in response.json()["results"]] == ["created"]
    assert Message.objects.filter(external_id="x-1").count() == 2


def test_the_database_keeps_external_ids_unique_within_a_feed_and_among_unattributed_messages():
    account = UserFactory(username="feed_a", role=Role.INGEST_SERVICE)
    MessageFactory(external_id="dup", submitted_by=account)
    MessageFactory(external_id="dup", submitted_by=None)

    with pytest.raises(IntegrityError), transaction.atomic():
        MessageFactory(external_id="dup", submitted_by=account)
    with pytest.raises(IntegrityError), transaction.atomic():
        MessageFactory(external_id="dup", submitted_by=None)


def test_a_compliance_admin_reads_the_status_of_what_they_submitted_and_every_message(admin_user):
    admin = APIClient()
    admin.force_authenticate(admin_user)
    own = post(admin, "adm-1").json()
    other = MessageFactory()

    assert admin.get(own["url"]).status_code == 200
    assert admin.get(f"/api/messages/{other.pk}/status/").status_code == 404
    assert admin.get(f"/api/messages/{other.pk}/").status_code == 200
