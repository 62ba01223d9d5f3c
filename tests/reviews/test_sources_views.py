"""Auditors see a message's source on its record, the CSV export carries subject, thread and
conversation ids, and the conversation page is for the product's roles only."""

from __future__ import annotations

import pytest

from scoring.models import Conversation
from tests.factories import MessageFactory, ReviewDecisionFactory, reviewable_message
from tests.reviews.test_records_views import CSV_URL, csv_rows

pytestmark = pytest.mark.django_db


def email_in_thread() -> tuple[Conversation, object]:
    thread = Conversation.objects.create(kind=Conversation.Kind.EMAIL_THREAD, key="email:q@x", title="Fund")
    message = reviewable_message(
        conversation=thread,
        subject="Re: Fund",
        headers={"from": "Bob <bob@bank.example>", "to": ["ann@client.example"], "message_id": "r@x"},
        attachments=[{"name": "deck.pdf", "content_type": "application/pdf", "size": 9, "scored": False}],
    )
    return thread, message


def test_the_record_page_shows_the_email_headers_attachments_and_thread(auditor_client, reviewer):
    thread, message = email_in_thread()
    earlier = MessageFactory(conversation=thread, subject="Fund")
    decision = ReviewDecisionFactory(reviewer=reviewer, message=message)

    page = auditor_client.get(f"/review/records/{decision.pk}/").content.decode()

    assert "Re: Fund" in page and "Bob &lt;bob@bank.example&gt;" in page
    assert "deck.pdf" in page
    assert f'data-line="{earlier.pk}"' in page and f"/review/conversations/{thread.pk}/" in page


def test_the_csv_export_carries_subject_thread_and_conversation_ids(auditor_client, reviewer):
    thread, message = email_in_thread()
    chat = Conversation.objects.create(kind=Conversation.Kind.CHAT, key="slack:C1", title="#desk")
    line = reviewable_message(conversation=chat, channel="chat", body="Zero risk, promise.")
    ReviewDecisionFactory(reviewer=reviewer, message=message)
    ReviewDecisionFactory(reviewer=reviewer, message=line)

    rows = {row["external_id"]: row for row in csv_rows(auditor_client.get(CSV_URL))}

    assert rows[message.external_id]["subject"] == "Re: Fund"
    assert rows[message.external_id]["thread_id"] == str(thread.pk)
    assert rows[message.external_id]["conversation_id"] == ""
    assert rows[line.external_id]["conversation_id"] == str(chat.pk)
    assert rows[line.external_id]["thread_id"] == ""


def test_the_conversation_page_lists_its_messages_and_is_closed_to_outsiders(
    auditor_client, client, outsider
):
    thread, _ = email_in_thread()

    page = auditor_client.get(f"/review/conversations/{thread.pk}/")
    assert page.status_code == 200 and b"Re: Fund" in page.content
    assert auditor_client.get("/review/conversations/999999/").status_code == 404
    client.force_login(outsider)
    assert client.get(f"/review/conversations/{thread.pk}/").status_code in (302, 403)
