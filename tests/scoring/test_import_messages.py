"""`import_messages` goes through the bulk ingest service: same checks, same idempotency."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from scoring.models import Message

pytestmark = pytest.mark.django_db


def test_a_jsonl_file_is_imported_and_bad_lines_are_reported_by_line(tmp_path, capsys):
    path = tmp_path / "messages.jsonl"
    rows = [
        {"external_id": "f-1", "body": "The SEC approved this fund.", "channel": "email"},
        {"external_id": "f-2", "body": ""},
        "not an object",
        {"id": "f-3", "body": "See you at lunch."},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n")

    call_command("import_messages", str(path))

    out, err = capsys.readouterr()
    assert "created 2, duplicates 0, errors 3" in out
    assert "line 2: body must contain text." in err
    assert "line 3: not a JSON object" in err
    assert "line 5: invalid JSON" in err
    assert set(Message.objects.values_list("external_id", flat=True)) == {"f-1", "f-3"}


def test_a_row_received_in_the_future_is_reported_and_an_archived_one_imported(tmp_path, capsys):
    path = tmp_path / "messages.jsonl"
    rows = [
        {"external_id": "old", "body": "Hello.", "received_at": "2001-09-10T08:00:00Z"},
        {"external_id": "late", "body": "Hello.", "received_at": "2999-01-01T00:00:00"},  # naive: UTC
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")

    call_command("import_messages", str(path))

    out, err = capsys.readouterr()
    assert "created 1, duplicates 0, errors 1" in out
    assert "line 2: received_at 2999-01-01T00:00:00 is in the future" in err
    assert Message.objects.get().received_at.isoformat() == "2001-09-10T08:00:00+00:00"


def test_a_row_whose_received_at_names_no_real_moment_is_reported_not_a_crash_of_the_import(tmp_path, capsys):
    """A well-formed date-time can name no moment (30 February, hour 25, an offset of 99 hours):
    Django's parse_datetime raises on it, which ended the import and lost the rows read with it.
    Year 1 at +01:00 is 1 BC in UTC: PostgreSQL stored it and then failed every read of the row
    (the feed's status list answered 500). Each is refused by its line; the others are imported."""
    path = tmp_path / "messages.jsonl"
    rows = [
        {"external_id": "before", "body": "Hello."},
        {"external_id": "feb-30", "body": "Hello.", "received_at": "2024-02-30T10:00:00"},
        {"external_id": "hour-25", "body": "Hello.", "received_at": "2024-02-10T25:00:00"},
        {"external_id": "offset", "body": "Hello.", "received_at": "2024-02-10T10:00:00+99:00"},
        {"external_id": "bc", "body": "Hello.", "received_at": "0001-01-01T00:00:00+01:00"},
        {"external_id": "after", "body": "Hello.", "received_at": "0001-01-01T05:00:00+01:00"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")

    call_command("import_messages", str(path))

    out, err = capsys.readouterr()
    assert "created 2, duplicates 0, errors 4" in out
    assert "line 2: received_at '2024-02-30T10:00:00' is not a valid date-time (day is out of range" in err
    assert "line 3: received_at '2024-02-10T25:00:00' is not a valid date-time" in err
    assert "line 4: received_at '2024-02-10T10:00:00+99:00' is not a valid date-time" in err
    assert "line 5: received_at 0001-01-01T00:00:00+01:00 is out of range" in err
    stored = dict(Message.objects.values_list("external_id", "received_at"))  # every row reads back
    assert set(stored) == {"before", "after"}
    assert stored["after"].isoformat() == "0001-01-01T04:00:00+00:00"


def test_a_row_with_a_lone_surrogate_or_a_nul_is_reported_not_a_crash_of_the_import(tmp_path, capsys):
    """JSON escapes can spell text no database stores: a lone surrogate (no UTF-8 form) and NUL
    (PostgreSQL's text refuses it). Each row is refused with its line; the others are imported."""
    path = tmp_path / "messages.jsonl"
    path.write_text(
        '{"external_id": "s-1", "body": "Returns are \\ud800 guaranteed."}\n'
        '{"external_id": "s-2", "body": "Hello.", "sender": "bob\\u0000@bank.example"}\n'
        '{"external_id": "s-3\\udfff", "body": "Hello."}\n'
        '{"external_id": "ok", "body": "See you at lunch."}\n'
    )

    call_command("import_messages", str(path))

    out, err = capsys.readouterr()
    assert "created 1, duplicates 0, errors 3" in out
    assert "line 1: body contains a lone surrogate (U+D800 at character 12)" in err
    assert "line 2: sender contains a NUL character." in err
    assert "line 3: external_id contains a lone surrogate (U+DFFF" in err
    assert list(Message.objects.values_list("external_id", flat=True)) == ["ok"]


def test_importing_the_same_csv_twice_creates_nothing_the_second_time(tmp_path, capsys):
    path = tmp_path / "messages.csv"
    path.write_text('external_id,body,sender\nc-1,"Zero risk, promise.",ann@example.test\nc-2,Hello,bob\n')

    call_command("import_messages", str(path))
    call_command("import_messages", str(path))

    out = capsys.readouterr().out
    assert "created 2, duplicates 0, errors 0" in out
    assert "created 0, duplicates 2, errors 0" in out
    assert Message.objects.count() == 2


def test_a_csv_without_a_body_column_is_refused(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("external_id,text\nx,hello\n")

    with pytest.raises(CommandError, match="header row"):
        call_command("import_messages", str(path))
    assert Message.objects.count() == 0


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="does not exist"):
        call_command("import_messages", str(tmp_path / "nope.jsonl"))


@pytest.mark.parametrize(
    "name, text",
    [
        ("messages.csv", 'external_id,body,sender\nc-1,"Zero risk, promise.",ann@example.test\n'),
        ("messages.jsonl", json.dumps({"external_id": "c-1", "body": "Zero risk, promise."}) + "\n"),
    ],
)
def test_a_file_saved_with_a_byte_order_mark_is_imported_whole(tmp_path, capsys, name, text):
    # given: Excel's "CSV UTF-8" and Windows editors start the file with U+FEFF
    path = tmp_path / name
    path.write_text("\ufeff" + text, encoding="utf-8")

    call_command("import_messages", str(path))

    assert "created 1, duplicates 0, errors 0" in capsys.readouterr().out
    assert list(Message.objects.values_list("external_id", flat=True)) == ["c-1"]
