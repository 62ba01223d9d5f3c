"""What a reviewer saw stays what the record shows: once a message has a decision its text and
its explanation are refused every change (model, queryset, database trigger); the record page and
`verify_audit_chain` compare the stored text and explanation with the snapshot's digests and say
so when they differ (never "matches" without comparing); names on a record are those of the
moment of the decision."""

from __future__ import annotations

from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.urls import reverse

from explanations.models import Explanation
from reviews.audit import words_digest
from reviews.selectors import audit_chain_report, decision_snapshot
from reviews.triggers import POSTGRESQL_TRIGGERS, SQLITE_TRIGGERS, installed_triggers, sqlite_triggers_ensure
from scoring.models import ClaimType, Message
from tests.factories import ReviewDecisionFactory, reviewable_message
from tests.support.db_guard import evidence_guard_disabled

pytestmark = pytest.mark.django_db
ORIGINAL = "Our fund offers guaranteed returns of 12% a year, every year."


@pytest.fixture
def decision(reviewer):
    return ReviewDecisionFactory(reviewer=reviewer, message=reviewable_message(body=ORIGINAL))


def raw(sql: str, params: list) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def tamper(sql: str, params: list) -> None:
    with evidence_guard_disabled(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def record_page(client, decision) -> str:
    return client.get(reverse("reviews:record", args=[decision.pk])).content.decode()


def verify(capsys) -> tuple[int, str]:
    try:
        call_command("verify_audit_chain", verbosity=0)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out + out.err


# --- The text of a reviewed message is immutable ---------------------------------------------------


def test_saving_a_reviewed_message_with_another_text_is_refused(decision):
    message = Message.objects.get(pk=decision.message_id)
    message.body = "Our fund offers steady returns."
    with pytest.raises(PermissionError, match="reviewed message"):
        message.save()
    message = Message.objects.get(pk=decision.message_id)
    message.body_sha256 = "0" * 64
    with pytest.raises(PermissionError):
        message.save()
    assert Message.objects.get(pk=decision.message_id).body == ORIGINAL


def test_a_message_loaded_before_its_decision_and_refreshed_after_it_is_refused_too(reviewer):
    message = reviewable_message(body=ORIGINAL)
    ReviewDecisionFactory(reviewer=reviewer, message=Message.objects.get(pk=message.pk))
    message.refresh_from_db()
    message.body = "Our fund offers steady returns."
    with pytest.raises(PermissionError, match="reviewed message"):
        message.save()


def test_a_reviewed_message_still_saves_when_its_text_is_unchanged(decision):
    message = Message.objects.get(pk=decision.message_id)
    message.status_reason = "noted"
    message.save()  # other fields are not evidence
    assert Message.objects.get(pk=decision.message_id).status_reason == "noted"


def test_updating_the_text_of_reviewed_messages_through_a_queryset_is_refused(decision):
    with pytest.raises(PermissionError, match="reviewed message"):
        Message.objects.filter(pk=decision.message_id).update(body="edited")
    with pytest.raises(PermissionError):
        Message.objects.all().update(body_sha256="0" * 64)
    assert Message.objects.get(pk=decision.message_id).body == ORIGINAL


def test_updating_the_text_of_a_reviewed_message_in_sql_is_refused_by_the_database(decision):
    for statement, value in (
        ("UPDATE scoring_message SET body = %s WHERE id = %s", "edited"),
        ("UPDATE scoring_message SET body_sha256 = %s WHERE id = %s", "0" * 64),
    ):
        with pytest.raises(DatabaseError, match="immutable"):
            raw(statement, [value, decision.message_id])
    assert Message.objects.get(pk=decision.message_id).body == ORIGINAL


def test_a_message_not_yet_reviewed_is_not_frozen_by_the_trigger(db):
    message = reviewable_message()
    raw("UPDATE scoring_message SET body = %s WHERE id = %s", ["still in review", message.pk])
    assert Message.objects.get(pk=message.pk).body == "still in review"


# --- The explanation the reviewer saw is immutable ------------------------------------------------


def test_changing_or_deleting_the_explanation_of_a_reviewed_message_is_refused(decision):
    explanation = Explanation.objects.get(message_id=decision.message_id)
    explanation.score_without_top = 0.9
    with pytest.raises(PermissionError, match="reviewed message"):
        explanation.save()
    with pytest.raises(PermissionError):
        explanation.delete()
    with pytest.raises(PermissionError):
        Explanation.objects.filter(pk=explanation.pk).update(words=[])
    with pytest.raises(PermissionError):
        Explanation.objects.filter(pk=explanation.pk).delete()
    with pytest.raises(DatabaseError, match="immutable"):
        raw("UPDATE explanations_explanation SET passed = %s WHERE id = %s", [False, explanation.pk])
    with pytest.raises(DatabaseError, match="immutable"):
        raw("DELETE FROM explanations_explanation WHERE id = %s", [explanation.pk])
    stored = Explanation.objects.get(pk=explanation.pk)
    assert stored.passed is True and stored.score_without_top != 0.9


def test_the_explanation_of_a_message_in_review_can_still_change(db):
    message = reviewable_message()
    Explanation.objects.filter(message=message).update(passed=False)
    raw("DELETE FROM explanations_explanation WHERE message_id = %s", [message.pk])
    assert not Explanation.objects.filter(message=message).exists()


def test_every_guard_is_installed_and_sqlite_gets_a_dropped_one_back_after_migrate(db):
    expected = set(SQLITE_TRIGGERS if connection.vendor == "sqlite" else POSTGRESQL_TRIGGERS)
    assert installed_triggers(connection) == expected
    if connection.vendor == "sqlite":
        # a migration that rebuilds scoring_message drops its triggers; post_migrate restores them
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER reviews_message_text_frozen")
        assert "reviews_message_text_frozen" not in installed_triggers(connection)
        sqlite_triggers_ensure(connection)
        assert installed_triggers(connection) == expected


# --- The record page and the verifier compare the evidence with the snapshot ----------------------


def test_the_snapshot_keeps_the_digest_of_the_text_and_of_the_words_the_reviewer_saw(decision):
    explanation = Explanation.objects.get(message_id=decision.message_id)
    assert decision.snapshot["explanation"]["words_sha256"] == words_digest(explanation.words)
    assert (
        decision.snapshot["message"]["body_sha256"] == Message.objects.get(pk=decision.message_id).body_sha256
    )


def test_an_untouched_record_says_text_and_explanation_match_because_it_compared_them(
    decision, auditor_client
):
    page = record_page(auditor_client, decision)
    assert "This is the text that was reviewed" in page
    assert "scores, verdict and the words' sha256 (compared now)" in page
    assert "DOES NOT MATCH" not in page


def test_a_changed_text_is_shown_as_not_what_was_reviewed_and_verify_reports_it(
    decision, auditor_client, capsys
):
    tamper(
        "UPDATE scoring_message SET body = %s WHERE id = %s",
        ["Our fund offers steady returns.", decision.message_id],
    )
    page = record_page(auditor_client, decision)
    assert "This is not the text that was reviewed" in page
    assert 'id="chain-body"><strong class="bad">DOES NOT MATCH</strong>' in page
    assert "This is the text that was reviewed" not in page
    code, out = verify(capsys)
    assert code == 1 and "[body_changed]" in out and f"record #{decision.sequence}" in out


def test_a_changed_explanation_is_not_drawn_as_evidence_and_verify_reports_it(
    decision, auditor_client, capsys
):
    explanation = Explanation.objects.get(message_id=decision.message_id)
    words = [{**w, "score": 0.9 if w["word"] == "year" else 0.0} for w in explanation.words]
    tamper("UPDATE explanations_explanation SET words = %s WHERE id = %s", [_json(words), explanation.pk])
    page = record_page(auditor_client, decision)
    assert "The stored explanation differs from what the reviewer saw" in page
    assert "No highlight is drawn" in page and 'class="seg heat' not in page
    code, out = verify(capsys)
    assert code == 1 and "[explanation_changed]" in out and "words" in out


def test_an_explanation_that_is_gone_is_reported(decision, auditor_client, capsys):
    tamper("DELETE FROM explanations_explanation WHERE message_id = %s", [decision.message_id])
    assert "This explanation no longer exists" in record_page(auditor_client, decision)
    code, out = verify(capsys)
    assert code == 1 and "[explanation_missing]" in out


def _json(value) -> str:
    import json

    return json.dumps(value)


def _as_written_before_digests_and_names(message, **kwargs):
    snapshot = decision_snapshot(message)
    snapshot["explanation"].pop("words_sha256")
    return snapshot


def test_a_record_written_before_the_words_digest_says_the_words_were_not_compared(
    reviewer, auditor_client, capsys
):
    with mock.patch("reviews.services.decision_snapshot", _as_written_before_digests_and_names):
        old = ReviewDecisionFactory(reviewer=reviewer)
    page = record_page(auditor_client, old)
    assert "the words were <strong>not compared</strong>" in page
    assert "words' sha256 (compared now)" not in page
    assert "cannot be shown to be what the reviewer saw" in page
    report = audit_chain_report()
    assert report.intact and report.words_not_recorded == 1


# --- Names of the moment ------------------------------------------------------------------------------


def test_a_record_shows_the_username_and_claim_type_name_of_the_moment_of_the_decision(
    decision, auditor_client
):
    User.objects.filter(pk=decision.reviewer_id).update(username="renamed_later")
    ClaimType.objects.filter(code="guaranteed_returns").update(name="Renamed claim type")
    page = record_page(auditor_client, decision)
    assert '<span id="decided-by">rita_reviewer</span>' in page
    assert "Guaranteed returns" in page.split('id="verdict"')[1].split("</dd>")[0]
    assert "renamed_later" not in page and "Renamed claim type" not in page


def test_a_record_written_before_names_were_kept_says_it_shows_todays(reviewer, auditor_client):
    with mock.patch("reviews.services.decision_snapshot", _as_written_before_digests_and_names):
        old = ReviewDecisionFactory(reviewer=reviewer)
    User.objects.filter(pk=reviewer.pk).update(username="renamed_later")
    page = record_page(auditor_client, old)
    assert '<span id="decided-by">renamed_later</span>' in page
    assert "this record was written before snapshots kept the names of the moment" in page


def test_the_records_list_and_the_csv_show_the_names_of_the_moment_too(decision, auditor_client):
    User.objects.filter(pk=decision.reviewer_id).update(username="renamed_later")
    ClaimType.objects.filter(code="guaranteed_returns").update(name="Renamed claim type")
    rows = auditor_client.get(reverse("reviews:records")).content.decode().split("<tbody>")[1]
    assert "rita_reviewer" in rows and "Guaranteed returns" in rows
    assert "renamed_later" not in rows and "Renamed claim type" not in rows
    export = auditor_client.get(reverse("reviews:records_csv"))
    text = b"".join(export.streaming_content).decode()
    assert "rita_reviewer" in text and "renamed_later" not in text
