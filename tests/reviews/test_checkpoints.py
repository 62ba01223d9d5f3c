"""Signed checkpoints anchor the audit chain outside the database: truncation, a wiped table, a
rewrite re-hashed to the end, a forged, removed or missing checkpoint and a checkpoint log that is
missing or unreadable are each reported by `verify_audit_chain` and the audit page as a finding
of its own kind; the writer never signs over a chain that disagrees with its latest checkpoint;
PostgreSQL refuses TRUNCATE."""

from __future__ import annotations

import hashlib
import hmac
import json
import runpy
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.urls import reverse
from django.utils import timezone

from compliance_site.celery import app as celery_app
from reviews.audit import checkpoint_parse, checkpoint_sign
from reviews.checkpoint_store import checkpoint_store
from reviews.checkpoints import audit_checkpoint_write
from reviews.errors import AuditChainBroken
from reviews.hashing import record_hash
from reviews.models import ReviewDecision
from reviews.selectors import audit_chain_report
from reviews.tasks import audit_checkpoint
from tests.factories import ReviewDecisionFactory
from tests.support.db_guard import append_only_guard_disabled

pytestmark = pytest.mark.django_db
SETTINGS_FILE = Path(__file__).resolve().parents[2] / "compliance_site" / "settings.py"


@pytest.fixture
def chain(reviewer):
    return [ReviewDecisionFactory(reviewer=reviewer) for _ in range(4)]


def log_lines() -> list[str]:
    return list(checkpoint_store().lines())


def tamper(sql: str, params: list) -> None:
    with append_only_guard_disabled(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def verify(capsys) -> tuple[int, str]:
    try:
        call_command("verify_audit_chain", verbosity=0)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out + out.err


def audit_page(client) -> str:
    return client.get(reverse("reviews:audit_chain")).content.decode()


# --- Writing checkpoints -------------------------------------------------------------------------


def test_a_checkpoint_signs_the_head_its_hash_and_the_record_count(chain):
    checkpoint = audit_checkpoint_write()
    assert (checkpoint.sequence, checkpoint.head_hash, checkpoint.count) == (4, chain[-1].content_hash, 4)
    (line,) = log_lines()
    assert checkpoint_parse(line) == checkpoint
    assert checkpoint.previous_mac == ""


def test_an_unchanged_head_writes_no_second_checkpoint_and_the_next_one_links_to_the_last(chain, reviewer):
    first = audit_checkpoint_write()
    assert audit_checkpoint_write() is None
    ReviewDecisionFactory(reviewer=reviewer)
    second = audit_checkpoint_write()
    assert len(log_lines()) == 2
    assert (second.sequence, second.previous_mac) == (5, first.mac)


def test_an_empty_chain_gets_no_checkpoint(db):
    assert audit_checkpoint_write() is None
    assert not Path(checkpoint_store().location).exists()


def test_each_database_has_a_log_of_its_own_under_the_checkpoint_directory(chain):
    audit_checkpoint_write()
    store = checkpoint_store()
    assert Path(store.location).parent == Path(settings.AUDIT_CHECKPOINT_DIR)
    assert Path(store.location).name.startswith(f"{connection.vendor}-")


def test_beat_runs_the_checkpoint_task_every_interval():
    entry = settings.CELERY_BEAT_SCHEDULE["audit-checkpoint"]
    assert entry["schedule"] == settings.AUDIT_CHECKPOINT_INTERVAL_SECONDS
    assert entry["task"] in celery_app.tasks
    assert celery_app.tasks[entry["task"]].run.__doc__ == audit_checkpoint.__doc__


def test_the_checkpoint_format_is_pinned_by_a_golden_line():
    from datetime import UTC, datetime

    line = checkpoint_sign(
        key=b"golden-key",
        sequence=12,
        head_hash="cd" * 32,
        count=12,
        written_at=datetime(2026, 3, 1, 12, 0, 0, 250000, tzinfo=UTC),
        previous_mac="",
    )
    # the MAC is HMAC-SHA256 over the canonical JSON of the signed fields, without "mac"
    text = '{"count":12,"head_hash":"' + "cd" * 32 + '","previous_mac":"","sequence":12,"v":1,'
    text += '"written_at":"2026-03-01T12:00:00.250000Z"}'
    assert hmac.new(b"golden-key", text.encode("ascii"), hashlib.sha256).hexdigest() in line
    assert line == (
        '{"count":12,"head_hash":"' + "cd" * 32 + '",'
        '"mac":"f1c52269b8f9983ec1d77bb16c62ff6c9d3e6992057deda8a291a04e0697a469",'
        '"previous_mac":"","sequence":12,"v":1,"written_at":"2026-03-01T12:00:00.250000Z"}'
    )


# --- What the audit reports ---------------------------------------------------------------------


def test_an_intact_chain_under_its_checkpoint_is_intact_and_the_page_shows_the_checkpoint(
    chain, capsys, auditor_client
):
    checkpoint = audit_checkpoint_write()
    code, out = verify(capsys)
    assert code == 0
    assert "intact, 4 records" in out and "latest checkpoint: record #4" in out
    page = audit_page(auditor_client)
    assert "<strong>Intact:</strong> 4 records verified" in page
    assert 'id="latest-checkpoint"' in page and checkpoint.head_hash in page


def test_deleting_the_last_records_is_reported_as_truncation(chain, capsys, auditor_client):
    audit_checkpoint_write()
    tamper("DELETE FROM reviews_reviewdecision WHERE sequence > %s", [2])
    assert audit_chain_report().chain.intact  # the rows left still link up: the chain alone sees nothing
    code, out = verify(capsys)
    assert code == 1
    assert "[truncated]" in out and "ends at record #2" in out and "2 records were removed" in out
    page = audit_page(auditor_client)
    assert 'data-kind="truncated"' in page and "Records removed from the end" in page


def test_wiping_the_whole_table_is_reported_as_truncation(chain, capsys):
    audit_checkpoint_write()
    tamper("DELETE FROM reviews_reviewdecision", [])
    code, out = verify(capsys)
    assert code == 1
    assert "[truncated]" in out and "the chain is empty" in out and "4 records were removed" in out


def _rewrite_from(sequence: int, **changes) -> None:
    """Edit one record and re-hash it and every later one, as someone with the database's rights
    and the hashing code could: the chain then links up again."""
    rows = list(
        ReviewDecision.objects.filter(sequence__gte=sequence)
        .order_by("sequence")
        .values("id", "content_hash")
    )
    previous = ReviewDecision.objects.get(sequence=sequence - 1).content_hash if sequence > 1 else "0" * 64
    with append_only_guard_disabled(), connection.cursor() as cursor:
        for index, row in enumerate(rows):
            decision = ReviewDecision.objects.get(pk=row["id"])
            if index == 0:
                for name, value in changes.items():
                    setattr(decision, name, value)
            decision.previous_hash = previous
            new_hash = record_hash(decision)
            cursor.execute(
                "UPDATE reviews_reviewdecision SET note = %s, previous_hash = %s, content_hash = %s "
                "WHERE id = %s",
                [decision.note, previous, new_hash, decision.pk],
            )
            previous = new_hash


def test_an_edit_rehashed_to_the_end_of_the_chain_is_reported_as_a_rewrite(chain, capsys, auditor_client):
    audit_checkpoint_write()
    _rewrite_from(2, note="quietly changed")
    assert audit_chain_report().chain.intact  # re-hashed: the chain alone says intact
    code, out = verify(capsys)
    assert code == 1
    assert "[rewritten]" in out and "record #4 is stored with hash" in out
    assert 'data-kind="rewritten"' in audit_page(auditor_client)


def test_a_forged_checkpoint_is_reported_and_ignored(chain, capsys):
    audit_checkpoint_write()
    store = checkpoint_store()
    forged = checkpoint_sign(
        key=b"not-the-checkpoint-key",
        sequence=40,
        head_hash="ee" * 32,
        count=40,
        written_at=timezone.now(),
        previous_mac=checkpoint_parse(log_lines()[0]).mac,
    )
    store.append(forged)
    code, out = verify(capsys)
    assert code == 1
    assert "[checkpoint_forged]" in out and "does not verify" in out
    assert "[truncated]" not in out  # what a forged checkpoint claims is not believed


def test_an_altered_checkpoint_line_is_reported_as_forged(chain, capsys):
    audit_checkpoint_write()
    path = Path(checkpoint_store().location)
    raw = json.loads(path.read_text())
    raw["sequence"] = 2  # an edit to the file: the MAC no longer covers the content
    path.write_text(json.dumps(raw) + "\n" + "not json at all\n")
    code, out = verify(capsys)
    assert code == 1
    assert out.count("[checkpoint_forged]") == 2


def test_a_checkpoint_removed_from_the_log_is_reported(chain, reviewer, capsys):
    for _ in range(3):
        audit_checkpoint_write()
        ReviewDecisionFactory(reviewer=reviewer)
    path = Path(checkpoint_store().location)
    first, _, third = path.read_text().splitlines()
    path.write_text(f"{first}\n{third}\n")
    code, out = verify(capsys)
    assert code == 1
    assert "[checkpoint_removed]" in out


def test_records_that_no_checkpoint_covers_in_time_are_reported_missing(chain):
    grace = timedelta(seconds=settings.AUDIT_CHECKPOINT_GRACE_SECONDS)
    later = timezone.now() + grace + timedelta(seconds=1)
    assert audit_chain_report().intact  # just written: the task has not run yet
    report = audit_chain_report(now=later)
    # no checkpoint was ever written, so the log does not exist either: both are said
    assert [f.kind for f in report.findings] == ["checkpoint_log_unavailable", "checkpoint_missing"]
    assert "record #1" in report.findings[1].detail and "no checkpoint" in report.findings[1].detail
    audit_checkpoint_write()
    assert audit_chain_report(now=later).intact


def test_a_checkpoint_log_that_was_removed_is_a_finding_of_its_own(chain, capsys, auditor_client):
    # given checkpoints written, then the log file deleted
    audit_checkpoint_write()
    path = Path(checkpoint_store().location)
    path.unlink()
    later = timezone.now() + timedelta(seconds=settings.AUDIT_CHECKPOINT_GRACE_SECONDS + 1)
    # then, once a checkpoint must exist, the audit says the log is gone, not only that a
    # record is uncovered
    report = audit_chain_report(now=later)
    assert [f.kind for f in report.findings] == ["checkpoint_log_unavailable", "checkpoint_missing"]
    detail = report.findings[0].detail
    assert str(path) in detail and "does not exist" in detail and "4 records" in detail
    assert report.findings[0].title == "Checkpoint log missing or unreadable"


def test_a_checkpoint_log_that_cannot_be_read_is_a_finding_at_once(chain, capsys, auditor_client):
    # given a checkpoint log the application cannot read (here: a directory in its place)
    audit_checkpoint_write()
    path = Path(checkpoint_store().location)
    path.unlink()
    path.mkdir()
    # then verify_audit_chain and the audit page report it at once, as a finding of its own kind
    code, out = verify(capsys)
    assert code == 1
    assert "[checkpoint_log_unavailable] Checkpoint log missing or unreadable" in out
    assert str(path) in out and "cannot be read" in out and "holds 4 records" in out
    assert "[checkpoint_missing]" not in out  # the records are young: this is not about coverage
    page = audit_page(auditor_client)
    assert 'data-kind="checkpoint_log_unavailable"' in page and "cannot be read" in page


def test_a_missing_log_is_no_finding_while_the_chain_is_empty_or_young(db, reviewer):
    assert audit_chain_report(now=timezone.now() + timedelta(days=1)).intact  # no record: nothing to anchor
    ReviewDecisionFactory(reviewer=reviewer)
    assert audit_chain_report().intact  # the checkpoint task has not run yet


def test_a_retired_key_still_verifies_its_checkpoints(chain, settings):
    audit_checkpoint_write()
    settings.AUDIT_CHECKPOINT_OLD_KEYS = [settings.AUDIT_CHECKPOINT_KEY]
    settings.AUDIT_CHECKPOINT_KEY = "a-new-key-after-rotation-" + "x" * 20
    assert audit_chain_report().intact
    settings.AUDIT_CHECKPOINT_OLD_KEYS = []
    assert [f.kind for f in audit_chain_report().findings] == ["checkpoint_forged"]


# --- The writer signs only a chain that agrees with its latest checkpoint -------------------------


def test_the_writer_refuses_to_sign_over_a_truncated_chain(chain, reviewer, caplog):
    audit_checkpoint_write()
    tamper("DELETE FROM reviews_reviewdecision WHERE sequence > %s", [1])
    with pytest.raises(AuditChainBroken, match="records were removed"):
        audit_checkpoint_write()
    audit_checkpoint()  # the beat task logs it and stays quiet
    assert "audit checkpoint refused" in caplog.text
    assert len(log_lines()) == 1


def test_the_writer_refuses_to_sign_over_a_rewritten_chain(chain):
    audit_checkpoint_write()
    _rewrite_from(3, note="changed after the checkpoint")
    with pytest.raises(AuditChainBroken, match="rewritten"):
        audit_checkpoint_write()
    assert len(log_lines()) == 1


# --- The database refuses TRUNCATE --------------------------------------------------------------


def _no_pending_trigger_events() -> None:
    """PostgreSQL refuses TRUNCATE while the test's own inserts have deferred foreign-key checks
    pending; fire them first, so that the statement meets the guard, not that."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_emptying_the_decision_table_in_one_statement_is_refused_by_the_database(chain):
    """PostgreSQL: TRUNCATE (which fires no row trigger) meets a statement trigger. SQLite has no
    TRUNCATE; its DELETE without WHERE meets the row trigger."""
    _no_pending_trigger_events()
    statement = (
        "TRUNCATE reviews_reviewdecision CASCADE"
        if connection.vendor == "postgresql"
        else "DELETE FROM reviews_reviewdecision"
    )
    with (
        pytest.raises(DatabaseError, match=r"audit trail|append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(statement)
    assert ReviewDecision.objects.count() == 4


def test_truncating_the_messages_cascade_is_refused_on_postgresql(chain):
    if connection.vendor != "postgresql":
        pytest.skip("TRUNCATE is PostgreSQL's")
    _no_pending_trigger_events()
    for table in ("scoring_message", "explanations_explanation"):
        with (
            pytest.raises(DatabaseError, match="cannot be truncated"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(f"TRUNCATE {table} CASCADE")
    assert ReviewDecision.objects.count() == 4


# --- The key is a setting of its own --------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "error"),
    [
        (None, "AUDIT_CHECKPOINT_KEY is required"),
        ("s" * 60, "not SECRET_KEY"),
        ("too-short", "at least 32 characters"),
        ("change-me-to-a-third-long-random-string", "placeholder"),
    ],
)
def test_with_debug_off_the_checkpoint_key_is_required_and_must_be_a_secret_of_its_own(
    monkeypatch, key, error
):
    monkeypatch.setenv("DEBUG", "0")
    monkeypatch.setenv("SECRET_KEY", "s" * 60)
    monkeypatch.setenv("QA_SAMPLE_SALT", "q" * 60)
    if key is None:
        monkeypatch.delenv("AUDIT_CHECKPOINT_KEY", raising=False)
    else:
        monkeypatch.setenv("AUDIT_CHECKPOINT_KEY", key)
    with pytest.raises(ImproperlyConfigured, match=error):
        runpy.run_path(str(SETTINGS_FILE))


def test_with_debug_off_a_checkpoint_key_of_its_own_is_accepted(monkeypatch):
    monkeypatch.setenv("DEBUG", "0")
    monkeypatch.setenv("SECRET_KEY", "s" * 60)
    monkeypatch.setenv("QA_SAMPLE_SALT", "q" * 60)
    monkeypatch.setenv("AUDIT_CHECKPOINT_KEY", "k" * 40)
    assert runpy.run_path(str(SETTINGS_FILE))["AUDIT_CHECKPOINT_KEY"] == "k" * 40
