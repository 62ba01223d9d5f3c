"""Chat exports (scoring.sources.slack, scoring.sources.chat): every line a message of its own in
its conversation; an incomplete export refused whole."""

from __future__ import annotations

import json
import zipfile

import pytest

from scoring.segmentation import segment
from scoring.sources.chat import read_chat_csv, read_chat_jsonl
from scoring.sources.errors import SourceError
from scoring.sources.slack import ExportLimits, read_slack_export
from tests.scoring.sources.slack_fixtures import T0, slack_export


def test_a_slack_export_gives_one_message_per_line_with_names_and_markup_as_text(tmp_path):
    messages = read_slack_export(slack_export(tmp_path))

    assert [m.body for m in messages] == [
        "is the Harbor fund any good? & fees?",
        "The Harbor fund is our flagship.",
        "It is approved and endorsed by the SEC.",
        "thanks @Sarah Adviser",
    ]  # the join notice is not a message
    assert [m.sender for m in messages] == ["Ines Client", "Sarah Adviser", "Sarah Adviser", "Ines Client"]
    assert {m.conversation_key for m in messages} == {"slack:C0"}
    assert messages[0].conversation_title == "#client-desk"
    assert messages[1].external_id == f"slack:C0:{T0 + 30:.6f}"
    assert messages[1].received_at.timestamp() == T0 + 30
    assert all(m.channel == "chat" for m in messages)


def test_a_deleted_thread_parents_placeholder_is_not_a_message_but_its_replies_are(tmp_path):
    lines = [
        {"subtype": "tombstone", "user": "USLACKBOT", "text": "This message was deleted.", "ts": T0},
        {"user": "U1", "text": "Yes, it is guaranteed.", "ts": T0 + 5, "thread_ts": f"{T0:.6f}"},
    ]

    messages = read_slack_export(slack_export(tmp_path, {"desk": lines}))

    assert [m.body for m in messages] == ["Yes, it is guaranteed."]


def test_a_slack_export_with_a_missing_channel_file_is_refused_whole(tmp_path):
    folder = slack_export(tmp_path, listed=["client-desk", "compliance"])

    with pytest.raises(SourceError) as caught:
        read_slack_export(folder)

    assert caught.value.code == "missing_channel_file"
    assert "'compliance'" in caught.value.message and "nothing was imported" in caught.value.message


def test_a_zipped_slack_export_is_read_and_a_zip_bomb_export_refused(tmp_path):
    folder = slack_export(tmp_path)
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for file in folder.rglob("*.json"):
            z.write(file, f"Workspace Export/{file.relative_to(folder).as_posix()}")
    assert len(read_slack_export(archive)) == 4

    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("channels.json", "[]")
        z.writestr("general/2025-03-03.json", "[" + " " * (4 * 1024 * 1024) + "]")
    with pytest.raises(SourceError) as caught:
        read_slack_export(bomb, limits=ExportLimits(max_bytes=10**9, max_ratio=100))
    assert caught.value.code == "archive_bomb"


def test_a_generic_transcript_in_jsonl_or_csv_gives_one_message_per_row(tmp_path):
    rows = [
        {
            "conversation_id": "desk-7",
            "sender": "Sam",
            "sent_at": "2025-03-03T10:00:00Z",
            "text": "Our fund is new.",
        },
        {
            "conversation_id": "desk-7",
            "sender": "Sam",
            "sent_at": "2025-03-03T10:00:20Z",
            "text": "Losses are impossible.",
        },
        {"conversation_id": "desk-7", "sender": "Sam", "text": "no time"},
    ]
    jsonl = tmp_path / "chat.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    csv_file = tmp_path / "chat.csv"
    csv_file.write_text(
        "conversation_id,sender,sent_at,text,channel\n+4477,+4477,2025-03-03 10:00:00,Call me back,sms\n"
    )

    reads = list(read_chat_jsonl(jsonl))
    (csv_read,) = list(read_chat_csv(csv_file))

    first, second, third = (item for _, item in reads)
    assert first.conversation_key == second.conversation_key == "chat:desk-7"
    assert first.external_id != second.external_id and first.external_id.startswith("chat:")
    assert isinstance(third, SourceError) and "sent_at is missing" in str(third) and reads[2][0] == "line 3"
    assert csv_read[1].channel == "sms" and csv_read[1].received_at.isoformat() == "2025-03-03T10:00:00+00:00"


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_transcript_saved_with_a_byte_order_mark_is_read(tmp_path, suffix):
    # given: Excel's "CSV UTF-8" and Windows editors start the file with U+FEFF
    path = tmp_path / f"chat.{suffix}"
    if suffix == "csv":
        text = "conversation_id,sender,sent_at,text\ndesk-7,Sam,2025-03-03T10:00:00Z,Losses are impossible.\n"
        read = read_chat_csv
    else:
        row = {"conversation_id": "desk-7", "sender": "Sam", "sent_at": "2025-03-03T10:00:00Z"}
        text = json.dumps({**row, "text": "Losses are impossible."}) + "\n"
        read = read_chat_jsonl
    path.write_text("\ufeff" + text, encoding="utf-8")

    # when
    ((position, message),) = list(read(path))

    # then
    assert position == ("line 2" if suffix == "csv" else "line 1")
    assert message.body == "Losses are impossible." and message.conversation_key == "chat:desk-7"


def test_a_slack_bots_card_is_read_and_a_shared_message_is_quoted_under_the_comment(tmp_path):
    # given: an integration posting only a card (attachments) or only blocks, a message shared
    # from another channel under a comment, and a link's preview
    lines = [
        {
            "subtype": "bot_message",
            "bot_id": "B1",
            "username": "PromoBot",
            "text": "",
            "attachments": [{"fallback": "New offer", "title": "Harbor Fund", "text": "Returns guaranteed."}],
            "ts": T0,
        },
        {
            "subtype": "bot_message",
            "bot_id": "B2",
            "username": "Digest",
            "text": "",
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Zero risk, *capital safe*."}}],
            "ts": T0 + 1,
        },
        {
            "user": "U1",
            "text": "warn your clients about this one",
            "attachments": [{"is_share": True, "author_name": "Mallory", "text": "40% a month, no risk!"}],
            "ts": T0 + 2,
        },
        {
            "user": "U1",
            "text": "<https://news.example/a|read this>",
            "attachments": [{"from_url": "https://news.example/a", "title": "Stocks to soar", "text": "..."}],
            "ts": T0 + 3,
        },
    ]
    folder = slack_export(tmp_path, {"desk": lines})

    # when
    card, blocks, share, link = read_slack_export(folder)

    # then
    assert (card.sender, card.body) == ("PromoBot", "Harbor Fund\nReturns guaranteed.")
    assert (blocks.sender, blocks.body) == ("Digest", "Zero risk, *capital safe*.")
    assert share.body == "warn your clients about this one\n\n> Mallory:\n> 40% a month, no risk!"
    assert [s.kind for s in segment(share.body)] == ["body", "quoted"]
    assert link.body == "read this"


def test_an_apps_blocks_are_read_beside_the_summary_it_sends_as_text(tmp_path):
    lines = [
        {
            "subtype": "bot_message",
            "bot_id": "B1",
            "username": "Marketing",
            "text": "New post from Marketing",
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": "New post from Marketing"}},
                {
                    "type": "section",
                    "text": {"type": "mrkdwn", "text": "Our fund returns *20% a year, guaranteed*."},
                },
            ],
            "ts": T0,
        },
        {
            "user": "U1",
            "text": "Fees are 1%.",
            "blocks": [
                {
                    "type": "rich_text",
                    "elements": [
                        {"type": "rich_text_section", "elements": [{"type": "text", "text": "Fees are 1%."}]}
                    ],
                }
            ],
            "ts": T0 + 5,
        },
    ]

    messages = read_slack_export(slack_export(tmp_path, {"desk": lines}))

    assert [m.body for m in messages] == [
        "New post from Marketing\nOur fund returns *20% a year, guaranteed*.",
        "Fees are 1%.",
    ]
