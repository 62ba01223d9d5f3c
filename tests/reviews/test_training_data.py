"""Reviewed decisions exported as labelled training rows (issue: close the loop)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from reviews.services import decision_record, lock_claim_next
from reviews.training_data import FinalDecision, training_data_export, training_rows
from tests.factories import ReviewDecisionFactory, UserFactory, claim_type, reviewable_message

pytestmark = pytest.mark.django_db


def final(message_id, body, verdict, code=None, *, decision_id=None, reviewer_id=1, agrees=None):
    return FinalDecision(message_id, body, decision_id or message_id, reviewer_id, verdict, code, agrees)


def test_rows_take_the_standing_label_and_merge_duplicate_bodies_with_provenance():
    rows, summary = training_rows(
        [
            final(1, "Your principal is bulletproof.", "claim", "risk_free", reviewer_id=7, agrees=False),
            final(2, "Your principal is bulletproof.", "claim", "risk_free", reviewer_id=8, agrees=False),
            final(3, "See you at lunch.", "no_claim", agrees=True),
        ]
    )

    assert [(r["body"], r["label"], r["claim_type"]) for r in rows] == [
        ("Your principal is bulletproof.", 1, "risk_free"),
        ("See you at lunch.", 0, "no_claim"),
    ]
    assert rows[0]["provenance"] == {
        "decision_ids": [1, 2],
        "message_ids": [1, 2],
        "reviewer_count": 2,
        "model_agreed": False,
    }
    assert summary.duplicates_merged == 1 and summary.rows == 2


def test_escalated_and_contradictory_items_are_left_out_and_counted():
    rows, summary = training_rows(
        [
            final(1, "Ironclad payout, trust me.", "escalate"),
            final(2, "The fund will surely climb.", "claim", "performance_forecast"),
            final(3, "The fund will surely climb.", "no_claim"),
            final(4, "Plain hello.", "no_claim"),
        ]
    )

    assert [r["body"] for r in rows] == ["Plain hello."]
    assert (summary.escalated_left_out, summary.contradictory_left_out) == (1, 2)


def test_a_message_with_a_part_not_read_is_left_out_and_counted():
    rows, summary = training_rows(
        [
            FinalDecision(1, "See the attached terms.", 1, 1, "claim", "risk_free", False, unread_part=True),
            final(2, "Plain hello.", "no_claim"),
        ]
    )

    assert [r["body"] for r in rows] == ["Plain hello."]
    assert summary.unread_left_out == 1 and summary.rows == 1


def test_the_export_reads_whether_a_part_was_not_read_from_the_message(reviewer):
    unread = [
        {"name": "terms.txt", "content_type": "text/plain", "size": 9, "scored": False, "unreadable": True}
    ]
    ReviewDecisionFactory(
        reviewer=reviewer, message=reviewable_message(body="See the terms.", attachments=unread)
    )
    ReviewDecisionFactory(
        reviewer=reviewer, verdict="no_claim", message=reviewable_message(body="Lunch at one?")
    )

    rows, summary = training_data_export()

    assert [r["body"] for r in rows] == ["Lunch at one?"] and summary.unread_left_out == 1


def test_a_correction_replaces_the_superseded_label(reviewer, admin_user):
    first = ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim")
    decision_record(
        message=first.message,
        reviewer=admin_user,
        verdict="claim",
        claim_type=claim_type("guaranteed_returns"),
        supersedes=first,
        supersede_reason="missed the promise in the second sentence",
    )

    rows, summary = training_data_export()

    assert [(r["label"], r["claim_type"]) for r in rows] == [(1, "guaranteed_returns")]
    assert summary.messages == 1


def test_the_command_writes_jsonl_and_reports_what_it_left_out(tmp_path, capsys):
    reviewer = UserFactory(username="rev", role="reviewer")
    ReviewDecisionFactory(
        reviewer=reviewer, verdict="claim", message=reviewable_message(body="Returns are certain.")
    )
    ReviewDecisionFactory(reviewer=reviewer, verdict="escalate", message=reviewable_message(body="Odd one."))
    out = tmp_path / "extra.jsonl"

    call_command("export_training_data", "--out", str(out))

    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["body"], r["claim_type"]) for r in lines] == [("Returns are certain.", "guaranteed_returns")]
    summary = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert summary["escalated_left_out"] == 1 and summary["rows"] == 1


def test_the_export_page_is_for_compliance_admins_and_downloads_jsonl(client, admin_user, reviewer, auditor):
    ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim", message=reviewable_message(body="Hi there."))

    for user in (reviewer, auditor):
        client.force_login(user)
        assert client.get("/review/training-data/").status_code == 403
    client.force_login(admin_user)
    page = client.get("/review/training-data/")
    download = client.get("/review/training-data/?download=1")
    bad = client.get("/review/training-data/?since=yesterday")

    assert page.status_code == 200 and b"Rows (unique bodies)" in page.content
    assert download["Content-Disposition"].startswith("attachment;")
    assert json.loads(b"".join(download.streaming_content))["body"] == "Hi there."
    assert bad.status_code == 400


def test_a_blind_double_review_is_left_out_until_it_is_decided(settings, admin_user):
    """Drawn for a second review, a message is not decided yet; its two reviewers disagreeing
    sends it to a compliance admin, and only the admin's decision labels it."""
    settings.DOUBLE_REVIEW_RATE = 1.0
    first, second = UserFactory(role="reviewer"), UserFactory(role="reviewer")
    message = reviewable_message(body="Your capital is as safe as houses.")
    ReviewDecisionFactory(message=message, reviewer=first, verdict="no_claim")
    message.refresh_from_db()

    waiting = training_data_export()
    assert lock_claim_next(reviewer=second) == message
    decision_record(message=message, reviewer=second, verdict="claim", claim_type=claim_type("risk_free"))
    message.refresh_from_db()
    disagreed = training_data_export()
    decision_record(message=message, reviewer=admin_user, verdict="claim", claim_type=claim_type("risk_free"))
    decided = training_data_export()

    assert message.status == "escalated"
    for rows, summary in (waiting, disagreed):
        assert rows == [] and summary.escalated_left_out == 1
    assert [(r["label"], r["claim_type"]) for r in decided[0]] == [(1, "risk_free")]
    assert decided[1].escalated_left_out == 0
