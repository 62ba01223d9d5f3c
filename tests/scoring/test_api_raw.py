"""POST /api/messages/raw/: one email as it travels (message/rfc822) with the ingest token.
Good mail is stored once with its headers, attachments and thread; each bad input gets its own
error code and stores nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from reviews.tokens import api_token_issue
from scoring.models import Conversation, Message
from scoring.sources.documents import pdf_document
from scoring.sources.mailgen import AttachmentSpec
from tests.scoring.sources.mail_fixtures import (
    WHEN,
    big_attachment_mail,
    mail,
    raw_mail,
    with_attachment,
    zip_bomb,
)

pytestmark = pytest.mark.django_db

URL = "/api/messages/raw/"


@pytest.fixture
def api(service_account):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(user=service_account).token}")
    return client


def post(api, raw: bytes, content_type: str = "message/rfc822"):
    return api.generic("POST", URL, data=raw, content_type=content_type)


def test_an_email_is_stored_with_its_headers_and_attachments_and_posting_it_again_is_harmless(api):
    raw = mail(
        "Hi Ann,\n\nThe payouts are certain.\n\nBest,\nBob",
        attachments=(
            AttachmentSpec("terms.txt", "text/plain", b"Capital protected."),
            AttachmentSpec("chart.png", "image/png", b"\x89PNG...."),
        ),
    ).as_bytes()

    first = post(api, raw)
    again = post(api, raw)

    assert first.status_code == 202, first.json()
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    message = Message.objects.get()
    assert message.external_id == "m1@bank.example" and message.channel == "email"
    assert message.subject == "Your statement" and message.sender == "bob@bank.example"
    assert [a["name"] for a in message.attachments] == ["terms.txt", "chart.png"]
    assert "Capital protected." in message.body
    assert message.conversation.kind == Conversation.Kind.EMAIL_THREAD


def test_a_pdf_is_read_into_the_message_and_a_long_one_keeps_the_message_and_routes_it(api, settings):
    # given: a mail with a short PDF, and one whose PDF would take the body past MAX_BODY_CHARS
    settings.MAX_BODY_CHARS = 1_000
    short = pdf_document([["Capital is 100% protected."]])
    long = pdf_document([[f"Line {i}: the fund invests in bonds and equities." for i in range(40)]])
    raw = mail("The terms.", attachments=(AttachmentSpec("terms.pdf", "application/pdf", short),)).as_bytes()
    raw_long = mail(
        "The prospectus.",
        message_id="<long@bank.example>",
        attachments=(AttachmentSpec("prospectus.pdf", "application/pdf", long),),
    ).as_bytes()

    # when
    first, second = post(api, raw), post(api, raw_long)

    # then: both stored (202); the short PDF's words are the message's, the long one is a part not read
    assert (first.status_code, second.status_code) == (202, 202), (first.json(), second.json())
    assert Message.objects.get(external_id="m1@bank.example").body.endswith("Capital is 100% protected.")
    stored = Message.objects.get(external_id="long@bank.example")
    assert stored.body == "The prospectus." and stored.has_unread_part


def test_a_reply_posted_later_joins_the_thread_of_its_parent(api):
    post(api, mail("Is it safe?", message_id="<q@client.example>").as_bytes())
    post(
        api,
        mail("Yes.", message_id="<r@bank.example>", in_reply_to="<q@client.example>").as_bytes(),
    )

    assert Message.objects.values("conversation").distinct().count() == 1


def test_the_same_message_id_with_another_text_is_a_409(api):
    post(api, mail("First text.").as_bytes())

    response = post(api, mail("Another text.").as_bytes())

    assert response.status_code == 409 and response.json()["error"]["code"] == "conflict"


BAD = {
    "malformed MIME": (
        raw_mail('Content-Type: multipart/mixed; boundary="b1"', body=b"--zz\n\nnothing\n"),
        400,
        "malformed_mime",
    ),
    "no text part": (
        raw_mail("Content-Type: image/png", "Content-Transfer-Encoding: base64", body=b"iVBORw0KGgo=\n"),
        400,
        "no_text_part",
    ),
    "unknown charset": (
        raw_mail("Content-Type: text/plain; charset=x-klingon", body=b"caf\xe9\n"),
        400,
        "unknown_charset",
    ),
    "lying charset": (
        raw_mail("Content-Type: text/plain; charset=utf-8", body="café".encode("latin-1")),
        400,
        "charset_mismatch",
    ),
    "25 MB attachment": (big_attachment_mail(25), 413, "message_too_large"),
    "nested message/rfc822 loop": (
        raw_mail(
            "Content-Type: multipart/mixed; boundary=b1",
            body=b"--b1\nContent-Type: text/plain\n\nsee below\n--b1\nContent-Type: message/rfc822\n\n"
            b"From: a@bank.example\nMessage-ID: <raw@bank.example>\n\nhello\n--b1--\n",
        ),
        400,
        "message_loop",
    ),
    "zip bomb": (with_attachment("report.zip", "application/zip", zip_bomb()), 413, "archive_bomb"),
    "not an email": (b"hello, this is not mail\n", 400, "not_an_email"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_each_bad_input_gets_its_own_error_and_stores_nothing(api, case):
    raw, status, code = BAD[case]

    response = post(api, raw)

    assert response.status_code == status, response.content[:300]
    assert response.json()["error"]["code"] == code
    assert Message.objects.count() == 0 and Conversation.objects.count() == 0


def test_an_email_whose_text_is_only_characters_the_scorer_refuses_has_no_text_part(api):
    # a zero-width space and a soft hyphen are not text, by the scorer's rule, as spaces are not
    raw = mail("\u200b\u200b \u00ad\n").as_bytes()

    response = post(api, raw)

    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"]["code"] == "no_text_part"
    assert Message.objects.count() == 0 and Conversation.objects.count() == 0


def test_an_email_dated_in_the_future_is_stored_as_received_when_it_arrives(api):
    # its Date header is the sender's clock: the mail is not refused, nor dated 2999
    before = timezone.now()

    response = post(api, mail(date=datetime(2999, 1, 1, tzinfo=UTC)).as_bytes())

    assert response.status_code == 202, response.content[:300]
    message = Message.objects.get()
    assert before <= message.received_at <= timezone.now()
    assert "2999" in message.headers["date"]
    assert any("in the future" in note for note in message.headers["notes"])


def test_an_email_dated_in_the_past_keeps_its_date(api):
    post(api, mail().as_bytes())

    assert Message.objects.get().received_at == WHEN


NUL_MAIL = (
    b"From: =?utf-8?b?Qm9iAA==?= <bob@bank.example>\r\nTo: ann@client.example\r\n"
    b"Subject: =?utf-8?b?SGkAdGhlcmU=?=\r\nMessage-ID: <nul@bank.example>\r\n"
    b"Date: Tue, 4 Mar 2025 09:30:00 +0000\r\nMIME-Version: 1.0\r\n"
    b"Content-Type: multipart/mixed; boundary=B\r\n\r\n"
    b"--B\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n"
    b"\r\nThe pay=00outs are certain.\r\n"
    b"--B\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Disposition: attachment; filename*=utf-8''te%00rms.txt\r\nContent-Transfer-Encoding: base64\r\n"
    b"\r\nQ2FwaXRhbAAgcHJvdGVjdGVkLg==\r\n--B--\r\n"
)


def test_nul_characters_in_a_raw_email_are_removed_from_all_it_stores(api):
    # a NUL in a decoded part (its text, an attachment's text or name, a header) is not the
    # sender's text: the mail is stored without them, where a JSON body with a NUL is a 400
    response = post(api, NUL_MAIL)

    assert response.status_code == 202, response.content[:300]
    message = Message.objects.get()
    assert message.body.startswith("The payouts are certain.")
    assert "Capital protected." in message.body
    assert message.subject == "Hithere"
    assert message.headers["from"] == "Bob <bob@bank.example>"
    assert [a["name"] for a in message.attachments] == ["terms.txt"]
    stored = [message.body, message.subject, message.sender, str(message.headers), str(message.attachments)]
    assert not any("\x00" in text for text in stored)


def test_an_attachment_over_its_limit_is_a_413_naming_it_and_stores_nothing(api, settings):
    # given the default limits: a 12 MB attachment (16 MB as base64) in a message under 25 MB
    raw = big_attachment_mail(12)
    assert (
        len(raw) < settings.EMAIL_MAX_MESSAGE_BYTES and settings.EMAIL_MAX_ATTACHMENT_BYTES < 12 * 1024 * 1024
    )

    response = post(api, raw)

    assert response.status_code == 413, response.content[:300]
    error = response.json()["error"]
    assert error["code"] == "attachment_too_large" and "video.bin" in str(error), error
    assert Message.objects.count() == 0 and Conversation.objects.count() == 0


def test_an_empty_body_and_a_json_body_are_refused(api):
    assert post(api, b"").json()["error"]["code"] == "empty_body"
    assert post(api, b" \r\n").json()["error"]["code"] == "empty_body"
    # Content-Length "0", as a client sends it for no body
    empty = api.generic("POST", URL, data=b"", CONTENT_LENGTH="0", CONTENT_TYPE="message/rfc822")
    assert empty.status_code == 400 and empty.json()["error"]["code"] == "empty_body"
    assert post(api, b'{"body": "x"}', "application/json").status_code == 415
    assert Message.objects.count() == 0


def test_only_ingest_accounts_may_post_raw_mail(reviewer):
    client = APIClient()
    client.force_authenticate(reviewer)

    assert (
        client.generic("POST", URL, data=mail().as_bytes(), content_type="message/rfc822").status_code == 403
    )
    assert APIClient().generic("POST", URL, data=b"x", content_type="message/rfc822").status_code == 401
    assert Message.objects.count() == 0


def test_the_schema_documents_the_raw_endpoint_with_its_error_responses(api, admin_user):
    client = APIClient()
    client.force_authenticate(admin_user)

    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    operation = schema["paths"]["/api/messages/raw/"]["post"]
    assert "message/rfc822" in operation["requestBody"]["content"]
    assert {"200", "202", "400", "401", "403", "409", "413", "415"} <= set(operation["responses"])
    assert "malformed_mime" in operation["responses"]["400"]["description"]
