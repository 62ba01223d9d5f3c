"""Auditors see a message's source on its record as the reviewer saw it (the email by part, a chat
line with the lines it was scored with), the CSV export carries subject, thread and conversation
ids, and the conversation page is for the product's roles only."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from reviews.models import ReviewDecision
from reviews.selectors import decision_reading
from scoring.models import Conversation, Message, Prediction
from scoring.segmentation import segment, segments_json
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
    assert "could not be read" not in page  # listed as not scored, not as text that could not be read


def test_an_attachment_whose_text_could_not_be_read_says_so_on_the_review_page(reviewer_client):
    note = "not scored: password-protected: its text cannot be read without the password"
    message = reviewable_message(
        subject="Offer",
        headers={"from": "Bob <bob@bank.example>", "to": ["ann@client.example"], "message_id": "o@x"},
        attachments=[
            {"name": "offer.zip", "content_type": "application/zip", "size": 139, "scored": False},
            {
                "name": "offer.zip/terms.txt",
                "content_type": "text/plain",
                "size": 23,
                "scored": False,
                "note": note,
                "unreadable": True,
            },
        ],
    )

    page = reviewer_client.get(f"/review/messages/{message.pk}/").content.decode()

    row = page[page.index('data-attachment="offer.zip/terms.txt"') :].split("</tr>")[0]
    assert "its text was not read, so nothing in it was checked" in row and note in row


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
    assert re.search(r'class="badge status-in_review">In review<', page.content.decode())
    assert auditor_client.get("/review/conversations/999999/").status_code == 404
    client.force_login(outsider)
    assert client.get(f"/review/conversations/{thread.pk}/").status_code in (302, 403)


# --- The record shows what the reviewer saw: the message by part, the chat context ----------------

REPLY = (
    "Hi Ann,\n\nNo: nothing is guaranteed, returns vary.\n\n"
    "Kind regards,\nBob Adviser\nPast performance is no guarantee of future results.\n\n"
    "On Mon, 3 Mar 2025 at 17:02, Ann Client <ann@client.example> wrote:\n"
    "> Is the fund guaranteed to return 8%?"
)
ATTACHED = "\n\n[Attachment: terms.txt \u00b7 text/plain \u00b7 10 bytes]\nZero risk."


def email_with_parts(*, history: str = "quoted") -> Message:
    """A reply whose prediction stores its parts as the pipeline does (scoring.segmentation): the
    sender's words, a sign-off with a disclaimer, quoted history (or, with history="seen", history
    already shown in an earlier message of the thread) and a text attachment."""
    thread = Conversation.objects.create(
        kind=Conversation.Kind.EMAIL_THREAD, key=f"email:{history}", title="Fund"
    )
    body = REPLY + ATTACHED
    message = reviewable_message(
        body=body,
        rule_phrase=None,
        conversation=thread,
        subject="Re: Fund",
        headers={"from": "Bob <bob@bank.example>", "to": ["ann@client.example"], "message_id": "p@x"},
        attachments=[
            {
                "name": "terms.txt",
                "content_type": "text/plain",
                "size": 10,
                "scored": True,
                "note": "",
                "start": len(REPLY) + 2,
                "end": len(body),
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
    parts = segments_json(segment(REPLY))
    assert [p["kind"] for p in parts] == ["body", "signature", "quoted"]  # what the segmenter reads
    if history == "seen":
        parts[-1] = {**parts[-1], "kind": "seen", "routes": False}
    parts.append({"kind": "attachment", "start": len(REPLY) + 2, "end": len(body), "routes": True})
    prediction = message.routing_prediction
    prediction.segments = parts
    prediction.window_scores = [{"start": 0, "end": len(REPLY), "score": 0.91, "routes": True}]
    if history == "seen":
        prediction.context = {"seen_quoted": [{"start": parts[2]["start"], "end": parts[2]["end"]}]}
    prediction.save()
    return message


def part_html(page: str, kind: str) -> str:
    """The markup of the first part of `kind` (a folded <details> or a plain <div>)."""
    match = re.search(
        rf'<(details|div) class="message-part part-{kind}" data-part="{kind}">(.*?)</\1>', page, re.S
    )
    assert match, f"no {kind} part in the page"
    return match.group(0)


def text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def assert_shown_by_part(page: str, *, history: str) -> None:
    quoted = part_html(page, history)
    assert quoted.startswith("<details") and "<details open" not in quoted  # folded
    label = "Quoted or forwarded history" if history == "quoted" else "already shown in an earlier message"
    assert label in quoted and "Is the fund guaranteed to return 8%?" in text(quoted)
    signature = part_html(page, "signature")
    assert signature.startswith("<div") and "Sign-off, signature and disclaimers" in signature
    assert "Past performance is no guarantee" in text(signature)
    assert "Attachment: terms.txt" in part_html(page, "attachment")
    body = part_html(page, "body")
    assert "nothing is guaranteed" in text(body) and "the score came from here" in body


@pytest.mark.parametrize("history", ["quoted", "seen"])
def test_the_review_page_folds_quoted_or_seen_history_and_labels_the_signature(reviewer_client, history):
    message = email_with_parts(history=history)

    page = reviewer_client.get(f"/review/messages/{message.pk}/").content.decode()

    assert_shown_by_part(page, history=history)


def test_an_email_record_shows_the_quoted_history_folded_the_signature_and_the_attachments(
    auditor_client, reviewer
):
    message = email_with_parts()
    decision = ReviewDecisionFactory(reviewer=reviewer, message=message)

    page = auditor_client.get(f"/review/records/{decision.pk}/").content.decode()

    assert_shown_by_part(page, history="quoted")
    assert 'tr data-attachment="chart.png"' in page and "not scored: image/png is not text" in page
    assert 'id="parts-check"' not in page  # the parts come from the snapshot


def test_a_message_score_below_its_best_window_is_explained_by_the_length_term(
    reviewer_client, auditor_client, reviewer
):
    """The stored best window (0.91) is above the message score when the length term lowered it:
    the part that drove the score says so, on the review page and on the record."""
    message = email_with_parts()
    prediction = message.routing_prediction
    prediction.score = 0.72
    prediction.save()

    review = part_html(reviewer_client.get(f"/review/messages/{message.pk}/").content.decode(), "body")
    decision = ReviewDecisionFactory(reviewer=reviewer, message=message)
    record = part_html(auditor_client.get(f"/review/records/{decision.pk}/").content.decode(), "body")

    for body in (review, record):
        assert (
            "best window 0.910; the message score 0.720 is that window's lowered by the length term" in body
        )
    prediction.score = 0.91
    prediction.save()
    same = part_html(reviewer_client.get(f"/review/messages/{message.pk}/").content.decode(), "body")
    assert "best window 0.910" in same and "length term" not in same


def test_an_email_record_marks_history_already_seen_in_the_thread(auditor_client, reviewer):
    decision = ReviewDecisionFactory(reviewer=reviewer, message=email_with_parts(history="seen"))

    page = auditor_client.get(f"/review/records/{decision.pk}/").content.decode()

    assert_shown_by_part(page, history="seen")
    assert "not scored again" in part_html(page, "seen")


def chat_line_scored_in_context() -> tuple[Message, Message, Message]:
    """Sam's two lines that make a claim only together, Ann's line between them; the completing
    line is routed with the context that drove its score, as scoring.services.context stores it."""
    chat = Conversation.objects.create(kind=Conversation.Kind.CHAT, key="slack:C9", title="#desk")
    start = timezone.now() - timedelta(hours=1)
    opening = MessageFactory(
        conversation=chat, channel="chat", sender="Sam", body="Your returns", received_at=start
    )
    other = MessageFactory(
        conversation=chat, channel="chat", sender="Ann", body="ok?", received_at=start + timedelta(seconds=10)
    )
    completing = reviewable_message(
        body="are guaranteed at 12 percent every year.",
        rule_phrase=None,
        conversation=chat,
        channel="chat",
        sender="Sam",
        received_at=start + timedelta(seconds=20),
    )
    prediction = completing.routing_prediction
    prediction.context = {
        "lines": {
            "message_ids": [opening.pk],
            "text": f"Your returns\n{completing.body}",
            "score": 0.93,
            "before_score": 0.12,
            "line_score": 0.41,
            "drove": True,
            "seconds": 120,
        }
    }
    prediction.save()
    return opening, other, completing


def test_a_chat_record_driven_by_its_context_shows_the_lines_that_drove_the_score(auditor_client, reviewer):
    opening, other, completing = chat_line_scored_in_context()
    decision = ReviewDecisionFactory(reviewer=reviewer, message=completing)
    assert decision.snapshot["prediction"]["context"]["lines"]["message_ids"] == [opening.pk]
    # the prediction row is not guarded once reviewed: the record shows what its snapshot kept
    Prediction.objects.filter(pk=completing.routing_prediction_id).update(context={})

    page = auditor_client.get(f"/review/records/{decision.pk}/").content.decode()

    assert "Scored in context:" in page and "read together they score 0.930" in page
    assert f'class="line in-context" data-line="{opening.pk}"' in page
    assert f'class="line" data-line="{other.pk}"' in page  # Ann's line was not read with it
    assert f'class="line current" data-line="{completing.pk}"' in page
    assert page.count("scored with this line") == 1


def test_a_record_written_before_snapshots_kept_the_reading_shows_the_stored_one_and_says_so(reviewer):
    opening, _, completing = chat_line_scored_in_context()
    # given a record whose snapshot names its prediction but has no segments or context
    older = ReviewDecision(snapshot={"prediction": {"id": completing.routing_prediction_id, "score": 0.9}})

    reading = decision_reading(older)

    assert reading.recorded is False
    assert reading.context["lines"]["message_ids"] == [opening.pk]
    assert decision_reading(ReviewDecision(snapshot={"prediction": None})).context == {}
