"""The audit chain: the command and the auditor page report it intact, and name the first
broken record when a row is tampered with behind the application's back."""

import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from tests.factories import ReviewDecisionFactory
from tests.support.db_guard import append_only_guard_disabled

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain(reviewer):
    return [ReviewDecisionFactory(reviewer=reviewer) for _ in range(4)]


def tamper(sql: str, params: list) -> None:
    with append_only_guard_disabled(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def run_verify(capsys) -> tuple[int, str, str]:
    try:
        call_command("verify_audit_chain", verbosity=0)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_command_reports_an_intact_chain_with_its_record_count(chain, capsys):
    code, out, _ = run_verify(capsys)
    assert code == 0
    assert "intact, 4 records" in out


def test_an_empty_chain_is_intact(capsys, db):
    code, out, _ = run_verify(capsys)
    assert code == 0 and "intact, 0 records" in out


def test_an_edited_note_is_caught_and_the_record_named(chain, capsys):
    tamper("UPDATE reviews_reviewdecision SET note = %s WHERE id = %s", ["edited later", chain[2].pk])
    code, _, err = run_verify(capsys)
    assert code == 1
    assert f"BROKEN at record #3 (id {chain[2].pk})" in err
    assert "altered" in err


def test_an_edited_snapshot_score_is_caught(chain, capsys):
    snapshot = {**chain[1].snapshot, "prediction": {**chain[1].snapshot["prediction"], "score": 0.2}}
    tamper(
        "UPDATE reviews_reviewdecision SET snapshot = %s WHERE id = %s", [json.dumps(snapshot), chain[1].pk]
    )
    code, _, err = run_verify(capsys)
    assert code == 1 and "record #2" in err


def test_a_deleted_record_is_caught_as_a_gap(chain, capsys):
    tamper("DELETE FROM reviews_reviewdecision WHERE id = %s", [chain[1].pk])
    code, _, err = run_verify(capsys)
    assert code == 1
    assert "record #3" in err and "missing" in err


def test_the_auditor_page_shows_the_same_verdict(chain, auditor_client):
    page = auditor_client.get(reverse("reviews:audit_chain")).content.decode()
    assert "<strong>Intact:</strong> 4 records verified" in page
    tamper(
        "UPDATE reviews_reviewdecision SET verdict = %s, claim_type_id = NULL WHERE id = %s",
        ["no_claim", chain[3].pk],
    )
    page = auditor_client.get(reverse("reviews:audit_chain")).content.decode()
    assert "<strong>Broken</strong> at record #4" in page
    assert "The 3 records before it verify." in page
    record_page = auditor_client.get(reverse("reviews:record", args=[chain[3].pk])).content.decode()
    assert "DOES NOT MATCH: this record was altered" in record_page
