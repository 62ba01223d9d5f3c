"""`import_messages` with real sources: an mbox, .eml files, a Slack export, chat transcripts.
Threads and conversations are linked, re-importing changes nothing, a broken message is
reported by its position while the good ones are stored, and a refused file stores nothing."""

from __future__ import annotations

import csv
import io
import json
import mailbox

import pypdf
import pytest
from django.core.management import CommandError, call_command
from tqdm import tqdm

import scoring.management.commands.import_messages as import_command
from scoring.models import Conversation, Message
from scoring.services.sources import sources_import
from scoring.sources.chat import read_chat_jsonl
from scoring.sources.detect import detect_format
from scoring.sources.documents import pdf_document
from scoring.sources.mailgen import AttachmentSpec
from tests.scoring.sources.mail_fixtures import GMAIL_REPLY, mail, raw_mail
from tests.scoring.sources.slack_fixtures import slack_export

pytestmark = pytest.mark.django_db


def write_mbox(path, messages: list[bytes]):
    box = mailbox.mbox(path, create=True)
    for raw in messages:
        box.add(raw)
    box.flush()
    box.close()
    return path


def thread() -> list[bytes]:
    first = mail("Is the fund guaranteed to return 8%?", message_id="<q1@client.example>", subject="Fund")
    reply = mail(
        GMAIL_REPLY,
        message_id="<a1@bank.example>",
        subject="Re: Fund",
        in_reply_to="<q1@client.example>",
        references=["<q1@client.example>"],
    )
    by_subject = mail("One more thing: fees are 1%.", message_id="<a2@bank.example>", subject="RE: fund")
    other = mail("Lunch on Friday?", message_id="<x1@bank.example>", subject="Lunch", to=["zoe@bank.example"])
    return [first.as_bytes(), reply.as_bytes(), by_subject.as_bytes(), other.as_bytes()]


def test_an_mbox_is_imported_with_its_threads_and_reimporting_it_changes_nothing(tmp_path, capsys):
    path = write_mbox(tmp_path / "journal.mbox", thread())

    call_command("import_messages", str(path))
    call_command("import_messages", str(path))

    out = capsys.readouterr().out
    assert "created 4, duplicates 0, errors 0" in out
    assert "created 0, duplicates 4, errors 0" in out
    by_id = {m.external_id: m for m in Message.objects.select_related("conversation")}
    assert set(by_id) == {"q1@client.example", "a1@bank.example", "a2@bank.example", "x1@bank.example"}
    fund = by_id["q1@client.example"].conversation
    assert fund.kind == Conversation.Kind.EMAIL_THREAD
    # In-Reply-To links the reply; the normalised subject and the same participants link the third.
    assert by_id["a1@bank.example"].conversation == fund == by_id["a2@bank.example"].conversation
    assert by_id["x1@bank.example"].conversation != fund
    assert Conversation.objects.count() == 2
    reply = by_id["a1@bank.example"]
    assert reply.subject == "Re: Fund" and reply.message_id_header == "a1@bank.example"
    assert reply.headers["in_reply_to"] == "q1@client.example"


def test_a_reply_imported_before_its_parent_still_meets_it_in_one_thread(tmp_path):
    first, reply, *_ = thread()
    call_command("import_messages", str(write_mbox(tmp_path / "a.mbox", [reply])))
    call_command("import_messages", str(write_mbox(tmp_path / "b.mbox", [first])))

    assert Message.objects.values("conversation").distinct().count() == 1


def test_an_mbox_with_one_broken_message_imports_the_others_and_reports_it_by_position(tmp_path, capsys):
    broken = raw_mail('Content-Type: multipart/mixed; boundary="b1"', body=b"--zz\n\nno boundary here\n")
    good = thread()
    path = write_mbox(tmp_path / "journal.mbox", [good[0], broken, good[3]])

    call_command("import_messages", str(path))

    out, err = capsys.readouterr()
    assert "created 2, duplicates 0, errors 1" in out
    assert "message 2: malformed MIME structure" in err
    assert Message.objects.count() == 2


def test_a_message_stored_with_an_attachment_whose_text_cannot_be_read_is_reported_by_position(
    tmp_path, capsys
):
    # given: the second message attaches a text file in a charset this server does not know
    unread = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: text/plain; charset=us-ascii\n\nThe terms are attached.\n--m\n"
            b'Content-Type: text/plain; charset=x-klingon; name="terms.txt"\n'
            b'Content-Disposition: attachment; filename="terms.txt"\n\n'
            b"Capital garanti, z\xe9ro risque.\n--m--\n"
        ),
    )
    good = thread()
    path = write_mbox(tmp_path / "journal.mbox", [good[0], unread, good[3]])

    # when
    call_command("import_messages", str(path))

    # then: all three are stored, and the one not read whole is named with its part and why
    out, err = capsys.readouterr()
    assert "created 3, of them not read whole 1, duplicates 0, errors 0" in out
    assert (
        "message 2: stored, but not all of it was read: 'terms.txt' (the attachment 'terms.txt' declares"
        in err
    )
    assert Message.objects.get(external_id="raw@bank.example").attachments[0]["unreadable"] is True

    # and importing it again reports nothing more: nothing new was stored
    call_command("import_messages", str(path))
    out, err = capsys.readouterr()
    assert "created 0, duplicates 3, errors 0" in out and "not all of it" not in err


def test_a_pdf_s_words_are_stored_in_the_message_and_a_protected_pdf_is_reported_not_read_whole(
    tmp_path, capsys
):
    # given: one mail with a factsheet PDF holding a claim, one with a password-protected PDF
    claim = mail(
        "The factsheet is attached.",
        message_id="<pdf@bank.example>",
        attachments=(AttachmentSpec("fund.pdf", "application/pdf", pdf_document([[CLAIM]])),),
    )
    protected = mail(
        "The offer; the password follows.",
        message_id="<locked@bank.example>",
        attachments=(AttachmentSpec("offer.pdf", "application/pdf", locked_pdf()),),
    )
    path = write_mbox(tmp_path / "journal.mbox", [claim.as_bytes(), protected.as_bytes()])

    # when
    call_command("import_messages", str(path))

    # then: the PDF's words are the message's, scored with it; the locked one is named with why
    out, err = capsys.readouterr()
    assert "created 2, of them not read whole 1, duplicates 0, errors 0" in out
    assert "message 2: stored, but not all of it was read: 'offer.pdf' (password-protected" in err
    stored = Message.objects.get(external_id="pdf@bank.example")
    (listed,) = stored.attachments
    assert listed["scored"] is True
    assert stored.body[listed["start"] : listed["end"]].endswith(CLAIM)
    assert Message.objects.get(external_id="locked@bank.example").has_unread_part


CLAIM = "Zero risk, 9% a year."


def locked_pdf() -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf_document([["Guaranteed."]]))))
    writer.encrypt("secret", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def test_a_folder_of_eml_files_and_a_single_eml_are_imported(tmp_path, capsys):
    folder = tmp_path / "mail"
    folder.mkdir()
    for index, raw in enumerate(thread()[:2]):
        (folder / f"{index}.eml").write_bytes(raw)
    single = tmp_path / "one.eml"
    single.write_bytes(thread()[3])

    call_command("import_messages", str(folder))
    call_command("import_messages", str(single))

    assert "created 2, duplicates 0, errors 0" in capsys.readouterr().out
    assert Message.objects.count() == 3


def test_an_eml_with_raw_8bit_names_in_its_headers_is_stored_with_the_names_readable(tmp_path, capsys):
    """Read as the standard library reads them, a To: name's raw Latin-1 byte was a lone surrogate in
    the headers' JSON, which PostgreSQL's jsonb refuses."""
    (tmp_path / "a.eml").write_bytes(
        b"From: J\xfcrgen <jm@bank.example>\nTo: Ren\xe9e <r@x.example>\nSubject: Geb\xfchren\n"
        b"Message-ID: <h8@bank.example>\nDate: Mon, 1 Dec 2025 10:00:00 +0000\n\nThe fund is fine.\n"
    )

    call_command("import_messages", str(tmp_path / "a.eml"))

    assert "created 1, duplicates 0, errors 0" in capsys.readouterr().out
    message = Message.objects.get()
    assert message.subject == "Gebühren" and message.headers["to"] == ["Renée <r@x.example>"]
    assert message.headers["from"] == "Jürgen <jm@bank.example>"


def test_a_refused_eml_exits_non_zero_and_stores_nothing(tmp_path):
    path = tmp_path / "bad.eml"
    path.write_bytes(raw_mail("Content-Type: text/plain; charset=utf-8", body="caf\xe9".encode("latin-1")))

    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_messages", str(path))
    assert Message.objects.count() == 0


def test_a_slack_export_is_imported_one_message_per_line_in_its_conversation(tmp_path, capsys):
    call_command("import_messages", str(slack_export(tmp_path)))

    assert "created 4, duplicates 0, errors 0" in capsys.readouterr().out
    conversation = Conversation.objects.get()
    assert conversation.kind == Conversation.Kind.CHAT and conversation.title == "#client-desk"
    assert list(conversation.messages.order_by("received_at").values_list("sender", flat=True)) == [
        "Ines Client",
        "Sarah Adviser",
        "Sarah Adviser",
        "Ines Client",
    ]


def test_a_slack_export_with_a_missing_channel_file_is_refused_and_stores_nothing(tmp_path):
    folder = slack_export(tmp_path, listed=["client-desk", "compliance"])

    with pytest.raises(CommandError, match=r"compliance.*nothing was imported"):
        call_command("import_messages", str(folder))
    assert Message.objects.count() == 0 and Conversation.objects.count() == 0


def test_a_chat_transcript_is_detected_and_imported(tmp_path, capsys):
    path = tmp_path / "chat.jsonl"
    rows = [
        {
            "conversation_id": "d1",
            "sender": "Sam",
            "sent_at": "2025-03-03T10:00:00Z",
            "text": "Our fund is new.",
        },
        {
            "conversation_id": "d1",
            "sender": "Sam",
            "sent_at": "2025-03-03T10:00:20Z",
            "text": "No losses ever.",
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    call_command("import_messages", str(path))

    assert "created 2" in capsys.readouterr().out
    assert Conversation.objects.get().messages.count() == 2


def test_a_chat_transcript_with_long_conversation_ids_and_titles_is_imported_one_conversation_each(
    tmp_path, capsys
):
    """A transcript's conversation id and title are the exporter's text, of any length. A title
    over its column's 300 characters made PostgreSQL refuse the whole chunk (DataError: the import
    crashed, nothing of it stored); two ids alike in their first 300 characters, cut to the key's
    length, were one conversation, each line read in the other's context."""
    path = tmp_path / "chat.jsonl"
    room = "trading-desk-" + "x" * 300
    rows = [
        {"conversation_id": room + "-a", "sender": "Sam", "sent_at": "2025-03-03T10:00:00Z", "text": "Hi."},
        {"conversation_id": room + "-b", "sender": "Ann", "sent_at": "2025-03-03T10:00:10Z", "text": "Hey."},
        {
            "conversation_id": "d1",
            "conversation_title": "T" * 350,
            "sender": "Sam",
            "sent_at": "2025-03-03T10:00:20Z",
            "text": "No losses ever.",
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    call_command("import_messages", str(path))

    assert "created 3, duplicates 0, errors 0" in capsys.readouterr().out
    assert Conversation.objects.count() == 3
    assert {c.messages.count() for c in Conversation.objects.all()} == {1}
    assert Conversation.objects.get(messages__body="No losses ever.").title == "T" * 300


def test_a_csv_body_over_the_csv_modules_field_limit_is_reported_and_the_rest_imported(tmp_path, capsys):
    # issue 17 item 12: the csv module refuses fields over 131,072 characters by default.
    path = tmp_path / "messages.csv"
    huge = "x" * 200_000
    path.write_text(f'external_id,body\nc-1,Hello\nc-2,"{huge}"\nc-3,Bye\n')

    call_command("import_messages", str(path))

    out, err = capsys.readouterr()
    assert "created 2, duplicates 0, errors 1" in out
    assert "line 3: body has 200,000 characters; the limit is 100,000." in err
    assert set(Message.objects.values_list("external_id", flat=True)) == {"c-1", "c-3"}


def test_a_csv_field_over_the_raised_field_limit_is_reported_by_line_and_the_following_rows_imported(
    tmp_path, capsys
):
    # given a field longer than even the raised limit (CSV_FIELD_FACTOR x MAX_BODY_CHARS): the csv
    # module raises csv.Error for that row
    from scoring.management.commands.import_messages import csv_field_limit

    limit = csv_field_limit()
    path = tmp_path / "messages.csv"
    huge = "x" * (limit + 1)
    path.write_text(f'external_id,body\nc-1,Hello\nc-2,"{huge}"\nc-3,Bye\nc-4,"Quoted, with a comma"\n')

    # when it is imported
    call_command("import_messages", str(path))

    # then that row is reported by its line, and reading goes on with the rows after it
    out, err = capsys.readouterr()
    assert "created 3, duplicates 0, errors 1" in out
    assert f"line 3: the row cannot be read (field larger than field limit ({limit})" in err
    assert f"a field is longer than {limit:,} characters" in err and "goes on at the next line" in err
    assert set(Message.objects.values_list("external_id", flat=True)) == {"c-1", "c-3", "c-4"}
    assert Message.objects.get(external_id="c-4").body == "Quoted, with a comma"


def test_an_import_in_which_every_item_fails_exits_non_zero(tmp_path):
    path = write_mbox(tmp_path / "journal.mbox", thread())

    with pytest.raises(CommandError, match=r"nothing was imported: all \d+ items"):
        call_command("import_messages", str(path), format="jsonl")
    assert Message.objects.count() == 0


CHAT_ROWS = [
    {"conversation_id": "d1", "sender": "Sam", "sent_at": f"2025-03-03T10:00:{i:02d}Z", "text": f"line {i}"}
    for i in range(6)
]


def chat_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["conversation_id", "sender", "sent_at", "text"])
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def test_a_chat_row_or_slack_message_holding_a_nul_is_reported_by_line_and_the_rest_imported(
    tmp_path, capsys
):
    """Unlike raw mail, whose NULs are decoding traces and are removed (scoring.sources.mail), a
    chat system's stored text is refused where it holds one (docs/roles/ingest_service.md)."""
    path = tmp_path / "chat.jsonl"
    rows = [
        {"conversation_id": "d1", "sender": "Sam", "sent_at": "2025-03-03T10:00:00Z", "text": "Hi\x00 there"},
        {"conversation_id": "d1", "sender": "Sam", "sent_at": "2025-03-03T10:00:20Z", "text": "No losses."},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    call_command("import_messages", str(path))
    out = capsys.readouterr()
    assert "created 1, duplicates 0, errors 1" in out.out
    assert "line 1: text contains a NUL character" in out.err
    assert list(Message.objects.values_list("body", flat=True)) == ["No losses."]

    lines = [
        {"user": "U1", "text": "Fees are 1%\x00.", "ts": 1.0e9},
        {"user": "U2", "text": "Thanks", "ts": 1.0e9 + 5},
    ]
    call_command("import_messages", str(slack_export(tmp_path, {"desk": lines})))
    out = capsys.readouterr()
    assert "created 1, duplicates 0, errors 1" in out.out and "body contains a NUL character." in out.err
    assert (
        Message.objects.filter(body="Thanks").exists()
        and not Message.objects.filter(body__contains="Fees").exists()
    )


@pytest.mark.parametrize("field", ["conversation_id", "conversation_title", "sender", "text"])
def test_a_chat_row_with_a_lone_surrogate_in_any_field_is_reported_by_line_not_a_crash(
    tmp_path, capsys, field
):
    row = {"conversation_id": "d1", "sender": "Sam", "sent_at": "2025-03-03T10:00:00Z", "text": "Hello there"}
    row[field] = "ab\ud800c"
    good = {"conversation_id": "d2", "sender": "Sam", "sent_at": "2025-03-03T10:00:00Z", "text": "Fine."}
    (tmp_path / "c.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(good) + "\n")

    call_command("import_messages", str(tmp_path / "c.jsonl"))

    out = capsys.readouterr()
    assert "created 1, duplicates 0, errors 1" in out.out
    assert f"line 1: {field} contains a lone surrogate (U+D800 at character 2)" in out.err
    assert list(Message.objects.values_list("body", flat=True)) == ["Fine."]


def test_a_slack_line_whose_file_name_has_a_lone_surrogate_is_refused_alone_not_the_import(tmp_path, capsys):
    """The name reaches the attachments' JSON, which PostgreSQL's jsonb refuses: the whole import
    failed at the database."""
    lines = [
        {"user": "U1", "text": "See the deck.", "ts": 1.0e9, "files": [{"name": "deck\udc80.pdf"}]},
        {"user": "U2", "text": "Thanks", "ts": 1.0e9 + 5},
    ]

    call_command("import_messages", str(slack_export(tmp_path, {"desk": lines})))

    out = capsys.readouterr()
    assert "created 1, duplicates 0, errors 1" in out.out
    assert "attachments[0].name contains a lone surrogate (U+DC80 at character 4)" in out.err
    assert list(Message.objects.values_list("body", flat=True)) == ["Thanks"]


def test_a_chat_csv_is_detected_and_imported_one_message_per_row_in_its_conversation(tmp_path, capsys):
    path = tmp_path / "desk.csv"
    path.write_text(chat_csv(CHAT_ROWS[:3]))
    assert detect_format(path) == "chat-csv"

    call_command("import_messages", str(path))

    assert "created 3, duplicates 0, errors 0" in capsys.readouterr().out
    conversation = Conversation.objects.get()
    assert conversation.kind == Conversation.Kind.CHAT
    lines = list(conversation.messages.order_by("received_at").values_list("channel", "sender", "body"))
    assert lines == [("chat", "Sam", "line 0"), ("chat", "Sam", "line 1"), ("chat", "Sam", "line 2")]


def text_files(tmp_path, n: int = len(CHAT_ROWS)) -> dict[str, object]:
    """The same `n` good rows in each text format (chat and plain message rows)."""
    rows = [
        {
            "conversation_id": "d1",
            "sender": "Sam",
            "sent_at": f"2025-03-03T10:{i // 60 % 60:02d}:{i % 60:02d}Z",
            "text": f"line {i}",
        }
        for i in range(n)
    ]
    plain = [{"external_id": f"p-{i}", "body": row["text"]} for i, row in enumerate(rows)]
    files = {
        "chat.jsonl": "".join(json.dumps(r) + "\n" for r in rows),
        "chat.csv": chat_csv(rows),
        "plain.jsonl": "".join(json.dumps(r) + "\n" for r in plain),
        "plain.csv": "external_id,body\n" + "".join(f"{r['external_id']},{r['body']}\n" for r in plain),
    }
    paths = {}
    for name, text in files.items():
        paths[name] = tmp_path / name
        paths[name].write_text(text)
    return paths


@pytest.mark.parametrize("name", ["chat.jsonl", "chat.csv", "plain.jsonl", "plain.csv"])
def test_a_text_file_that_stops_being_utf8_part_way_stores_nothing_and_names_the_line(tmp_path, name):
    # given 1,500 good rows (tens of KB: past the first buffer a text reader decodes, so that
    # reading the rows as they come would store three chunks of 500), then a Latin-1 byte
    path = text_files(tmp_path, 1500)[name]
    good = path.read_text()
    path.write_bytes(good.encode() + "caf\xe9\n".encode("latin-1"))
    bad_line = good.count("\n") + 1

    with pytest.raises(
        CommandError, match=rf"not UTF-8 text: byte 0xe9 .*\(line {bad_line}\).*Nothing was imported"
    ):
        call_command("import_messages", str(path), chunk=500)

    assert Message.objects.count() == 0 and Conversation.objects.count() == 0
    # and the good rows alone import
    path.write_text(good)
    call_command("import_messages", str(path), chunk=500)
    assert Message.objects.count() == 1500


def test_a_chat_csv_row_over_the_csv_modules_field_limit_is_reported_and_the_rest_imported(tmp_path, capsys):
    rows = [*CHAT_ROWS[:2], {**CHAT_ROWS[2], "text": "x" * 200_000}, CHAT_ROWS[3]]
    path = tmp_path / "desk.csv"
    path.write_text(chat_csv(rows))

    call_command("import_messages", str(path))

    out, err = capsys.readouterr()
    assert "created 3, duplicates 0, errors 1" in out
    assert "line 4: the row cannot be read" in err
    assert sorted(Message.objects.values_list("body", flat=True)) == ["line 0", "line 1", "line 3"]


def test_sources_import_reports_its_progress_once_per_stored_chunk(tmp_path):
    path = text_files(tmp_path)["chat.jsonl"]
    calls: list[int] = []

    report = sources_import(reads=read_chat_jsonl(path), chunk=4, progress=calls.append)

    assert report.created == 6 and calls == [4, 2]


def test_import_messages_draws_a_progress_bar_on_stderr(tmp_path, capsys, monkeypatch):
    # tqdm draws only on a terminal (disable=None): force it on, as a terminal would
    monkeypatch.setattr(import_command, "tqdm", lambda *a, **k: tqdm(*a, **{**k, "disable": False}))
    path = write_mbox(tmp_path / "journal.mbox", thread())

    call_command("import_messages", str(path))

    err = capsys.readouterr().err
    assert "importing journal.mbox" in err and "4/4" in err
