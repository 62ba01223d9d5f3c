"""The reviewer sees a message as what it came as, in a real browser: a chat line among the
lines around it (the flagged one highlighted) and its whole conversation; an email with its
headers, attachments and thread, its quoted history folded and its signature marked, and the
auditor sees the same on the record."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from scoring.models import Conversation
from tests.factories import MessageFactory, ReviewDecisionFactory, UserFactory, reviewable_message
from tests.reviews.browser.conftest import screenshot, sign_in
from tests.reviews.test_sources_views import email_with_parts

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_reviewer_reads_a_chat_line_in_its_conversation_and_an_email_in_its_thread(new_page):
    UserFactory(username="rita_reviewer", role="reviewer")
    start = timezone.now() - timedelta(hours=1)
    chat = Conversation.objects.create(kind=Conversation.Kind.CHAT, key="slack:C1", title="#client-desk")
    before = MessageFactory(
        conversation=chat, channel="chat", sender="Ines", body="any good?", received_at=start
    )
    flagged = reviewable_message(
        body="It is approved and endorsed by the SEC.",
        rule_phrase=None,
        conversation=chat,
        channel="chat",
        sender="Sarah",
        received_at=start + timedelta(seconds=30),
    )
    MessageFactory(
        conversation=chat,
        channel="chat",
        sender="Ines",
        body="great, thanks",
        received_at=start + timedelta(minutes=1),
    )
    thread = Conversation.objects.create(kind=Conversation.Kind.EMAIL_THREAD, key="email:q@x", title="Fund")
    question = MessageFactory(conversation=thread, subject="Fund", body="Is it safe?", received_at=start)
    email = reviewable_message(
        body="Your returns are guaranteed.\n\n[Attachment: terms.txt · text/plain · 10 bytes]\nZero risk.",
        conversation=thread,
        subject="Re: Fund",
        received_at=start + timedelta(minutes=5),
        headers={
            "from": "Bob <bob@bank.example>",
            "to": ["ann@client.example"],
            "date": "Tue, 4 Mar 2025",
            "message_id": "r@x",
        },
        attachments=[
            {
                "name": "terms.txt",
                "content_type": "text/plain",
                "size": 10,
                "scored": True,
                "note": "",
                "start": 30,
                "end": 86,
            },
            {
                "name": "chart.png",
                "content_type": "image/png",
                "size": 2048,
                "scored": False,
                "note": "not scored: image/png is not text",
            },
        ],
    )
    body_end, attachment_start = len("Your returns are guaranteed."), len("Your returns are guaranteed.\n\n")
    email.routing_prediction.segments = [
        {"kind": "body", "start": 0, "end": body_end, "routes": True},
        {"kind": "attachment", "start": attachment_start, "end": len(email.body), "routes": True},
    ]
    email.routing_prediction.save()
    page = new_page()
    sign_in(page, "rita_reviewer")

    # the chat line among its neighbours, itself highlighted
    page.goto(f"/review/messages/{flagged.pk}/")
    lines = page.locator(".conversation .conversation-lines li")
    expect(lines).to_have_count(3)
    expect(page.locator(".conversation li.current")).to_contain_text(
        "It is approved and endorsed by the SEC."
    )
    expect(page.locator(".conversation li.current")).to_contain_text("Sarah")
    expect(lines.first).to_contain_text("any good?")
    screenshot(page, "chat-line-in-conversation")
    page.click("text=The whole conversation")
    page.wait_for_url(f"**/review/conversations/{chat.pk}/")
    expect(page.locator("ol.conversation-lines li")).to_have_count(3)
    expect(page.locator(f'li[data-line="{before.pk}"]')).to_contain_text("Ines")

    # the email with its headers, attachments and thread
    page.goto(f"/review/messages/{email.pk}/")
    expect(page.locator(".mail-headers [data-field=subject]")).to_have_text("Re: Fund")
    expect(page.locator(".mail-headers")).to_contain_text("Bob <bob@bank.example>")
    expect(page.locator('.attachments tr[data-attachment="chart.png"]')).to_contain_text("not scored")
    expect(page.locator('#message-body [data-part="attachment"]')).to_contain_text("terms.txt")
    expect(page.locator(".conversation li")).to_have_count(2)
    screenshot(page, "email-in-thread")
    page.click(f'.conversation li[data-line="{question.pk}"] a')
    page.wait_for_url(f"**/review/messages/{question.pk}/")
    assert not page.console_errors, page.console_errors


def test_an_email_shows_its_quoted_history_folded_and_its_signature_marked_to_reviewer_and_auditor(
    new_page,
):
    rita = UserFactory(username="rita_reviewer", role="reviewer")
    UserFactory(username="audrey_auditor", role="auditor")
    email = email_with_parts()  # body, sign-off with a disclaimer, quoted question, text attachment
    page = new_page()
    sign_in(page, "rita_reviewer")

    page.goto(f"/review/messages/{email.pk}/")
    quoted = page.locator('#message-body details[data-part="quoted"]')
    expect(quoted.locator("summary")).to_contain_text("Quoted or forwarded history")
    expect(quoted.locator(".message-body")).to_be_hidden()  # folded
    signature = page.locator('#message-body [data-part="signature"]')
    expect(signature.locator(".part-label")).to_contain_text("Sign-off, signature and disclaimers")
    expect(signature).to_contain_text("Past performance is no guarantee")
    expect(page.locator('#message-body [data-part="body"]')).to_contain_text("the score came from here")
    expect(page.locator('#message-body [data-part="attachment"]')).to_contain_text("terms.txt")
    # the reviewer unfolds the quoted history from the keyboard
    quoted.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(quoted.locator(".message-body")).to_be_visible()
    expect(quoted.locator(".message-body")).to_contain_text("Is the fund guaranteed to return 8%?")
    screenshot(page, "email-quoted-history-and-signature")
    assert not page.console_errors, page.console_errors

    # the auditor reads the record of the decision: the same parts, the same marks
    decision = ReviewDecisionFactory(reviewer=rita, message=email)
    audit = new_page()
    sign_in(audit, "audrey_auditor")
    audit.goto(f"/review/records/{decision.pk}/")
    record_quoted = audit.locator('#message-body details[data-part="quoted"]')
    expect(record_quoted.locator("summary")).to_contain_text("Quoted or forwarded history")
    expect(record_quoted.locator(".message-body")).to_be_hidden()
    expect(audit.locator('#message-body [data-part="signature"] .part-label')).to_contain_text(
        "Sign-off, signature and disclaimers"
    )
    expect(audit.locator('.attachments tr[data-attachment="chart.png"]')).to_contain_text("not scored")
    assert not audit.console_errors, audit.console_errors
