"""Reading one email (scoring.sources.mail): what mail clients really send, and every bad input
refused with its own code before anything could be stored."""

from __future__ import annotations

import base64
import os
import zipfile

import pytest

from scoring.segmentation import QUOTED, segment
from scoring.sources.documents import pdf_document
from scoring.sources.errors import SourceError
from scoring.sources.mail import MailLimits, parse_email
from scoring.sources.mailgen import AttachmentSpec
from tests.scoring.sources.mail_fixtures import (
    FORWARD,
    GMAIL_REPLY,
    OUTLOOK_REPLY,
    big_attachment_mail,
    mail,
    raw_mail,
    with_attachment,
    zip_bomb,
    zip_of,
)


def kinds(text: str) -> list[str]:
    return [s.kind for s in segment(text)]


# --- what is kept -------------------------------------------------------------------------------


def test_the_headers_that_matter_are_kept_and_the_message_id_is_the_external_id():
    raw = mail(
        cc=["carl@bank.example"],
        in_reply_to="<m0@client.example>",
        references=["<root@client.example>", "<m0@client.example>"],
    ).as_bytes()

    message = parse_email(raw)

    assert message.external_id == "m1@bank.example" == message.message_id
    assert message.sender == "bob@bank.example"
    assert message.subject == "Your statement"
    assert message.received_at.isoformat() == "2025-03-04T09:30:00+00:00"
    assert message.headers["from"] == "Bob Adviser <bob@bank.example>"
    assert message.headers["to"] == ["ann@client.example"]
    assert message.headers["cc"] == ["carl@bank.example"]
    assert message.headers["in_reply_to"] == "m0@client.example"
    assert message.thread_refs == ("root@client.example", "m0@client.example")
    assert message.channel == "email"


def test_multipart_alternative_gives_its_text_plain_part():
    raw = mail("Plain words here.", form="alternative", html_style="newsletter").as_bytes()

    message = parse_email(raw)

    assert message.body == "Plain words here."
    assert message.headers["text_from"] == "text/plain"


@pytest.mark.parametrize("style", ["outlook", "gmail", "newsletter"])
def test_an_html_only_mail_is_read_as_text_without_markup_or_styles(style):
    raw = mail("Hi Ann,\n\nYour returns are guaranteed & safe.\n\nBest,\nBob", form="html", html_style=style)

    message = parse_email(raw.as_bytes())

    assert "Your returns are guaranteed & safe." in message.body
    assert "<" not in message.body and "MsoNormal" not in message.body and "{" not in message.body
    assert message.headers["text_from"] == "text/html"


def test_a_gmail_quote_in_html_becomes_quoted_lines_that_segmentation_finds():
    raw = mail("Thanks, noted.", form="html", html_style="gmail", quoted="Is it guaranteed?").as_bytes()

    body = parse_email(raw).body

    assert "> Is it guaranteed?" in body
    assert kinds(body)[-1] == QUOTED


def test_base64_and_quoted_printable_bodies_are_decoded():
    text = "Café prices rose 5% — the fund did not."
    b64 = raw_mail(
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: base64",
        body=base64.encodebytes(text.encode()),
    )
    qp = raw_mail(
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: quoted-printable",
        body=b"Caf=C3=A9 prices rose 5% =E2=80=94 the fund =\ndid not.\n",
    )

    assert parse_email(b64).body == text
    assert parse_email(qp).body == text


def test_iso_8859_1_and_windows_1252_are_read_including_the_curly_quotes_outlook_labels_latin_1():
    latin = raw_mail(
        "Content-Type: text/plain; charset=iso-8859-1",
        "Content-Transfer-Encoding: 8bit",
        body="\x93Garanti\x94 means guaranteed in French: caf\xe9.".encode("latin-1"),
    )
    windows = raw_mail(
        "Content-Type: text/plain; charset=windows-1252",
        "Content-Transfer-Encoding: 8bit",
        body="The fee is €10 \u2013 “fixed”.".encode("cp1252"),
    )

    assert parse_email(latin).body == "“Garanti” means guaranteed in French: café."
    assert parse_email(windows).body == "The fee is €10 \u2013 “fixed”."


def test_a_wrong_single_byte_label_on_utf8_text_is_read_as_utf8_and_noted():
    raw = raw_mail(
        "Content-Type: text/plain; charset=us-ascii",
        "Content-Transfer-Encoding: 8bit",
        body="Zürich office: no guarantee.".encode(),
    )

    message = parse_email(raw)

    assert message.body == "Zürich office: no guarantee."
    assert "read as UTF-8" in message.headers["notes"][0]


def test_outlook_and_gmail_replies_and_a_forward_keep_their_history_as_quoted():
    for text in (OUTLOOK_REPLY, GMAIL_REPLY, FORWARD):
        body = parse_email(mail(text).as_bytes()).body
        assert body == text.strip()
        assert QUOTED in kinds(body), text


def test_attachments_are_listed_and_only_text_ones_are_scored_as_part_of_the_message():
    raw = mail(
        attachments=(
            AttachmentSpec("terms.txt", "text/plain", b"Capital is 100% protected."),
            AttachmentSpec("prices.csv", "text/csv", b"fund,yield\nA,5%\n"),
            AttachmentSpec("chart.png", "image/png", b"\x89PNG binary"),
        )
    ).as_bytes()

    message = parse_email(raw)

    listed = {a["name"]: a for a in message.attachments}
    assert set(listed) == {"terms.txt", "prices.csv", "chart.png"}
    assert listed["chart.png"]["scored"] is False
    assert "not text" in listed["chart.png"]["note"]
    assert listed["chart.png"]["size"] == len(b"\x89PNG binary")
    terms = listed["terms.txt"]
    assert terms["scored"] and "Capital is 100% protected." in message.body[terms["start"] : terms["end"]]
    assert message.body.startswith("Hi Ann,")


def test_text_files_inside_a_zip_attachment_are_scored_and_the_rest_listed():
    archive = zip_of({"notes.txt": b"Double your money by March.", "logo.png": b"\x89PNG"})

    message = parse_email(with_attachment("pack.zip", "application/zip", archive))

    names = {a["name"]: a for a in message.attachments}
    assert names["pack.zip/notes.txt"]["scored"] is True
    assert names["pack.zip/logo.png"]["scored"] is False
    assert "Double your money by March." in message.body


def password_protected(files: dict[str, bytes]) -> bytes:
    """A zip whose files are marked encrypted (the flag a password-protected zip sets in each
    file's headers; zipfile writes no encrypted zip)."""
    data = bytearray(zip_of(files, compression=zipfile.ZIP_STORED))
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        while at != -1:
            data[at + flags_at] |= 0x1
            at = data.find(signature, at + 4)
    return bytes(data)


def test_a_text_file_in_a_password_protected_zip_is_listed_unreadable_and_other_parts_are_not():
    # given: a password-protected zip holding a text file, an image, and a zip that is not one
    raw = mail(
        "Hi Ann,\n\nThe offer is attached; the password follows by text.\n\nBob",
        attachments=(
            AttachmentSpec("offer.zip", "application/zip", password_protected({"terms.txt": b"Zero risk."})),
            AttachmentSpec("chart.png", "image/png", b"\x89PNG ..."),
            AttachmentSpec("broken.zip", "application/zip", b"PK\x03\x04 not a zip"),
        ),
    ).as_bytes()

    # when
    message = parse_email(raw)

    # then: the text file and the broken zip are text that could not be read; the image is a type
    # that is not read (the import reports only the first kind: ImportReport.partly_read)
    by_name = {a["name"]: a for a in message.attachments}
    terms = by_name["offer.zip/terms.txt"]
    assert (terms["scored"], terms["unreadable"]) == (False, True)
    assert terms["note"] == "not scored: password-protected: its text cannot be read without the password"
    assert by_name["broken.zip"]["unreadable"] is True
    assert "unreadable" not in by_name["chart.png"] and "unreadable" not in by_name["offer.zip"]
    assert "Zero risk" not in message.body


def test_an_attached_message_is_read_as_an_attachment_of_the_forward():
    inner = mail("Returns of 12% are certain.", message_id="<inner@bank.example>", subject="Offer")
    raw = mail(
        "See the offer below.", attachments=(AttachmentSpec("offer.eml", "message/rfc822", inner.as_bytes()),)
    )

    message = parse_email(raw.as_bytes())

    (attached,) = message.attachments
    assert attached["content_type"] == "message/rfc822" and attached["scored"] is True
    assert "Returns of 12% are certain." in message.body[attached["start"] : attached["end"]]


def test_a_message_without_a_message_id_gets_the_hash_of_its_bytes_as_external_id():
    raw = b"From: a@bank.example\nSubject: hi\n\nHello.\n"

    assert parse_email(raw).external_id == parse_email(raw).external_id
    assert parse_email(raw).external_id.startswith("sha256:")


def test_a_signed_mail_with_an_attachment_reads_its_text_once_and_lists_only_the_attachments():
    # given: PGP/MIME as Thunderbird sends it: multipart/signed > multipart/mixed >
    # (multipart/alternative > text/plain, text/html), application/pdf; the signature
    raw = raw_mail(
        "MIME-Version: 1.0",
        'Content-Type: multipart/signed; micalg=pgp-sha256; protocol="application/pgp-signature"; '
        'boundary="s"',
        body=(
            b"--s\nContent-Type: multipart/mixed; boundary=m\n\n"
            b"--m\nContent-Type: multipart/alternative; boundary=a\n\n"
            b"--a\nContent-Type: text/plain; charset=utf-8\n\nYour returns are guaranteed.\n"
            b"--a\nContent-Type: text/html; charset=utf-8\n\n<p>Your returns are guaranteed.</p>\n--a--\n"
            b"--m\nContent-Type: application/pdf; name=terms.pdf\nContent-Disposition: attachment; "
            b"filename=terms.pdf\nContent-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n--m--\n"
            b"--s\nContent-Type: application/pgp-signature; name=signature.asc\n\n"
            b"-----BEGIN PGP SIGNATURE-----\niQEzBAEBCAAd\n-----END PGP SIGNATURE-----\n--s--\n"
        ),
    )

    # when
    message = parse_email(raw)

    # then: the text once, as the body; no copy of it, nor its HTML twin, as an attachment
    assert message.body == "Your returns are guaranteed."
    assert [(a["name"], a["content_type"]) for a in message.attachments] == [
        ("terms.pdf", "application/pdf"),
        ("signature.asc", "application/pgp-signature"),
    ]


def test_a_body_inside_a_nested_multipart_mixed_is_not_repeated_as_an_attachment():
    # given: a list server's wrapper: multipart/mixed > (multipart/mixed > text/plain), footer
    raw = raw_mail(
        "Content-Type: multipart/mixed; boundary=o",
        body=(
            b"--o\nContent-Type: multipart/mixed; boundary=i\n\n"
            b"--i\nContent-Type: text/plain\n\nZero risk, I promise.\n--i--\n"
            b"--o\nContent-Type: text/plain\n\nTo unsubscribe, write to list@x.example\n--o--\n"
        ),
    )

    message = parse_email(raw)

    assert message.body.count("Zero risk, I promise.") == 1
    assert [a["name"] for a in message.attachments] == ["part-1"]
    assert message.body.endswith("To unsubscribe, write to list@x.example")


LIST_FOOTER = (
    b"_______________________________________________\nInvestors mailing list\n"
    b"To unsubscribe send an email to investors-leave@lists.example\n"
)


def test_a_mailing_list_mail_whose_content_is_html_only_reads_the_html_body_and_then_the_footer():
    # given: Mailman's wrapper around an HTML-only mail: multipart/mixed > text/html, then the
    # list's text/plain footer (the standard library's get_body prefers the footer)
    raw = raw_mail(
        "Content-Type: multipart/mixed; boundary=o",
        body=(
            b"--o\nContent-Type: text/html; charset=utf-8\n\n"
            b"<html><body><p>Hi all,</p><p>Our bond fund's returns are <b>guaranteed</b>.</p>"
            b"</body></html>\n"
            b"--o\nContent-Type: text/plain; charset=us-ascii\n"
            b"Content-Disposition: inline\n\n" + LIST_FOOTER + b"--o--\n"
        ),
    )

    # when
    message = parse_email(raw)

    # then: the sender's HTML as text, as the body, then the footer
    assert message.body.startswith("Hi all,\n\nOur bond fund's returns are guaranteed.")
    assert "<" not in message.body
    assert message.body.endswith("To unsubscribe send an email to investors-leave@lists.example")
    assert message.headers["text_from"] == "text/html"
    assert [(a["content_type"], a["scored"]) for a in message.attachments] == [("text/plain", True)]


def test_a_mailing_list_mail_with_plain_and_html_forms_still_reads_its_text_once():
    # given: the same wrapper around multipart/alternative (text/plain, text/html)
    raw = raw_mail(
        "Content-Type: multipart/mixed; boundary=o",
        body=(
            b"--o\nContent-Type: multipart/alternative; boundary=a\n\n"
            b"--a\nContent-Type: text/plain\n\nReturns are guaranteed.\n"
            b"--a\nContent-Type: text/html\n\n<p>Returns are guaranteed.</p>\n--a--\n"
            b"--o\nContent-Type: text/plain\n\n" + LIST_FOOTER + b"--o--\n"
        ),
    )

    message = parse_email(raw)

    assert message.body.count("Returns are guaranteed.") == 1
    assert message.body.startswith("Returns are guaranteed.")
    assert message.body.endswith("To unsubscribe send an email to investors-leave@lists.example")
    assert message.headers["text_from"] == "text/plain"


OFFER_HTML = (
    b"<html><head><style>p { color: navy }</style></head><body>"
    b"<h1>Income Plus</h1><p>Your returns are <b>guaranteed</b> at 8% a year.</p></body></html>\n"
)


@pytest.mark.parametrize(
    "disposition",
    [b'Content-Disposition: attachment; filename="offer.html"\n', b"Content-Disposition: inline\n", b""],
    ids=["attachment", "inline", "none"],
)
def test_an_html_part_after_a_text_body_is_read_as_text_and_scored(disposition):
    # given: a text/plain body, then an HTML page attached or shown inline after it
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: text/plain\n\nPlease see the offer.\n"
            b'--m\nContent-Type: text/html; charset=utf-8; name="offer.html"\n'
            + disposition
            + b"\n"
            + OFFER_HTML
            + b"--m--\n"
        ),
    )

    # when
    message = parse_email(raw)

    # then: its text, not its markup, is scored as an attachment's
    (offer,) = message.attachments
    assert (offer["name"], offer["content_type"], offer["scored"]) == ("offer.html", "text/html", True)
    assert message.body.startswith("Please see the offer.")
    assert message.body[offer["start"] : offer["end"]].endswith(
        "Income Plus\n\nYour returns are guaranteed at 8% a year."
    )
    assert "<" not in message.body and "color" not in message.body
    assert message.headers["text_from"] == "text/plain"


@pytest.mark.parametrize(
    ("text", "html"),
    [
        # the same words
        (b"Your returns are guaranteed.\nBest, Bob", b"<p>Your returns are guaranteed.<br>Best, Bob</p>"),
        # the text/plain body spells a link's address out where the HTML part shows its text
        (
            b"Your returns are guaranteed: see our site https://firm.example",
            b'<p>Your returns are guaranteed: see <a href="https://firm.example">our site</a></p>',
        ),
    ],
    ids=["same-words", "link-text"],
)
def test_an_html_part_that_repeats_the_text_body_in_multipart_mixed_is_listed_not_read_again(text, html):
    # given: a mailer that puts the two forms of its text in multipart/mixed, not alternative
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: text/plain\n\n" + text + b"\n"
            b"--m\nContent-Type: text/html\n\n" + html + b"\n--m--\n"
        ),
    )

    message = parse_email(raw)

    assert message.body == text.decode()
    (part,) = message.attachments
    assert (part["scored"], part["note"]) == (
        False,
        "not scored: the HTML form of the message's text, which is read",
    )


def test_an_html_part_in_multipart_mixed_that_repeats_the_text_but_for_a_line_reads_that_line():
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: text/plain\n\nHi Ann, your statement is attached.\nBest, Bob\n"
            b"--m\nContent-Type: text/html\n\n<p>Hi Ann, your statement is attached.</p>"
            b"<p>Returns are guaranteed.</p><p>Best, Bob</p>\n--m--\n"
        ),
    )

    message = parse_email(raw)

    assert message.body.count("your statement is attached") == 1
    assert message.body.endswith("]\nReturns are guaranteed.")
    assert message.headers["notes"] == [
        "the attachment 'part-1' is the HTML form of the message's text: only the lines of it that the "
        "text does not say are read."
    ]


def _text_then_alternative(first: bytes, second: bytes) -> bytes:
    """A mail of a text ("See the note below.") and, after it, a multipart/alternative of the two
    forms `first` and `second` (each its headers, a blank line and its content)."""
    return raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: text/plain\n\nSee the note below.\n"
            b"--m\nContent-Type: multipart/alternative; boundary=a\n\n"
            b"--a\n" + first + b"\n--a\n" + second + b"\n--a--\n--m--\n"
        ),
    )


def test_the_html_form_of_an_alternative_after_the_body_is_listed_not_read():
    raw = _text_then_alternative(
        b"Content-Type: text/plain\n\nZero risk to your capital.",
        b"Content-Type: text/html\n\n<p>Zero risk to your <i>capital</i>.</p>",
    )

    message = parse_email(raw)

    assert message.body.count("Zero risk to your capital.") == 1
    assert [(a["content_type"], a["scored"]) for a in message.attachments] == [
        ("text/plain", True),
        ("text/html", False),
    ]


def alternative_of(plain: bytes, html: bytes) -> bytes:
    return raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/alternative; boundary=a",
        body=(
            b"--a\nContent-Type: text/plain; charset=utf-8\n\n" + plain + b"\n"
            b"--a\nContent-Type: text/html; charset=utf-8\n\n" + html + b"\n--a--\n"
        ),
    )


OFFER = (
    b"<html><body><p>Dear investor,</p><p>Returns are <b>guaranteed</b> at 8% a year, with zero "
    b"risk to your capital.</p></body></html>"
)


@pytest.mark.parametrize(
    "html",
    [OFFER, b"<p>Returns are guaranteed.</p>"],
    ids=["letter", "one-line"],
)
def test_a_placeholder_text_plain_form_does_not_hide_the_html_form(html):
    # given: a text/plain form that only says to use an HTML client
    raw = alternative_of(b"To view this message, use an HTML-capable email client.", html)

    # when
    message = parse_email(raw)

    # then: the HTML form is the text, and the placeholder, which says something else, after it
    assert message.headers["text_from"] == "text/html"
    assert message.body.startswith(
        "Dear investor,\n\nReturns are guaranteed at 8% a year"
        if html == OFFER
        else "Returns are guaranteed."
    )
    assert message.body.count("Returns are guaranteed") == 1
    (placeholder,) = message.attachments
    assert (placeholder["name"], placeholder["content_type"], placeholder["scored"]) == (
        "text/plain form of the body",
        "text/plain",
        True,
    )
    assert message.body.endswith("]\nTo view this message, use an HTML-capable email client.")
    assert "say different things" in message.headers["notes"][0]


@pytest.mark.parametrize("plain", [b"", b"  \n", b"\xc2\xa0"], ids=["empty", "blank", "nbsp"])
def test_an_empty_text_plain_form_gives_the_html_form_instead_of_a_refusal(plain):
    message = parse_email(alternative_of(plain, OFFER))

    assert (
        message.body
        == "Dear investor,\n\nReturns are guaranteed at 8% a year, with zero risk to your capital."
    )
    assert message.headers["text_from"] == "text/html"
    assert message.attachments == []
    assert message.headers["notes"] == ["the text/plain form of the body is empty: its HTML form is read."]


def test_a_text_plain_form_that_says_much_less_than_the_html_form_gives_the_html_form():
    # given: a text/plain form that gives the first line of the HTML letter only
    letter = (
        b"<p>Our spring letter.</p><p>Income Plus pays 8% a year and the returns are guaranteed by the "
        b"bank. Your capital is never at risk, whatever the markets do, and you may withdraw at any time "
        b"without a fee.</p>"
    )
    raw = alternative_of(b"Our spring letter.\nRead it online: https://bank.example/letter", letter)

    # when
    message = parse_email(raw)

    # then: the HTML form, and after it the one line of the text/plain form it does not say
    assert message.body.startswith("Our spring letter.\n\nIncome Plus pays 8% a year and the returns are")
    assert message.body.count("Our spring letter") == 1
    assert message.body.endswith("]\nRead it online: https://bank.example/letter")
    assert [a["name"] for a in message.attachments] == ["text/plain form of the body"]
    assert message.headers["text_from"] == "text/html"
    assert message.headers["notes"] == [
        "the text/plain form of the body says less than its HTML form (it lacks 34 of the HTML form's "
        "words): the HTML form is read, and the lines of the text/plain form that it does not say "
        "after it."
    ]


def test_a_short_line_only_the_text_plain_form_says_is_read_after_the_html_form():
    # given: an HTML form adding 20 words and more to a text/plain form that otherwise repeats it
    # but for a line of fewer than 20 words (which was lost)
    letter = (
        b"<p>Our spring letter.</p><p>Income Plus is our new fund for savers who want a steady income "
        b"from a mix of bonds and shares, managed by our own team in London and paid into your account "
        b"every month.</p>"
    )
    plain = (
        b"Our spring letter.\nIncome Plus is our new fund for savers.\nReturns are guaranteed at 8% a year."
    )
    raw = alternative_of(plain, letter)

    # when
    message = parse_email(raw)

    # then: the HTML form, then that line of the text/plain form, each once
    assert message.headers["text_from"] == "text/html"
    assert message.body.startswith("Our spring letter.\n\nIncome Plus is our new fund")
    assert message.body.count("Our spring letter") == 1
    assert message.body.endswith("]\nReturns are guaranteed at 8% a year.")
    (form,) = message.attachments
    assert (form["name"], form["content_type"], form["scored"]) == (
        "text/plain form of the body",
        "text/plain",
        True,
    )
    assert message.headers["notes"][0].endswith(
        "the HTML form is read, and the lines of the text/plain form that it does not say after it."
    )


def test_a_japanese_text_plain_form_hard_wrapped_is_read_once_beside_its_unwrapped_html_form():
    # given: a text/plain form wrapped at 35 characters, and the HTML form's one paragraph
    text = (
        "弊社の新しい投資信託は毎年八パーセントの利回りを元本保証付きでお約束いたしますので安心してご投資いただけます。"
        "詳しくは担当者までお気軽にお問い合わせいただければ幸いでございますのでよろしくお願い申し上げます。"
    )
    wrapped = "\n".join(text[i : i + 35] for i in range(0, len(text), 35))
    raw = alternative_of(wrapped.encode(), f"<p>{text}</p>".encode())

    # when
    message = parse_email(raw)

    # then: its text/plain form alone (a run of such characters was one word, and the two forms
    # shared none)
    assert message.headers["text_from"] == "text/plain"
    assert message.body == wrapped
    assert message.attachments == []


def test_an_html_form_whose_charset_cannot_be_read_leaves_the_text_plain_form_read_with_a_note():
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/alternative; boundary=a",
        body=(
            b"--a\nContent-Type: text/plain\n\nZero risk.\n"
            b"--a\nContent-Type: text/html; charset=x-klingon\n\n<p>Z\xe9ro risque.</p>\n--a--\n"
        ),
    )

    message = parse_email(raw)

    assert message.body == "Zero risk." and message.headers["text_from"] == "text/plain"
    assert message.headers["notes"] == [
        "the HTML form of the body declares the charset 'x-klingon', which this server does not know, "
        "and its bytes are not UTF-8: it cannot be read without guessing. Its text/plain form is read."
    ]


def alternative_with_charsets(plain: tuple[str, bytes], html: tuple[str, bytes]) -> bytes:
    """A multipart/alternative body whose forms declare the charsets given with their bytes."""
    return raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/alternative; boundary=a",
        body=(
            f"--a\nContent-Type: text/plain; charset={plain[0]}\n\n".encode()
            + plain[1]
            + b"\n"
            + f"--a\nContent-Type: text/html; charset={html[0]}\n\n".encode()
            + html[1]
            + b"\n--a--\n"
        ),
    )


@pytest.mark.parametrize(
    ("plain", "reason"),
    [
        (("x-klingon", b"Des rendements garantis \xe0 8 %."), "declares the charset 'x-klingon'"),
        (("utf-8", "Des rendements garantis à 8 %.".encode("latin-1")), "0xE0"),
    ],
    ids=["unknown", "lying"],
)
def test_a_text_plain_form_whose_charset_cannot_be_read_gives_the_html_form_with_a_note(plain, reason):
    # given: a text/plain form that cannot be read beside an HTML form that can (the recipient's
    # client shows the HTML form; the mail was refused)
    raw = alternative_with_charsets(plain, ("utf-8", "<p>Des rendements garantis à 8 %.</p>".encode()))

    # when
    message = parse_email(raw)

    # then
    assert message.body == "Des rendements garantis à 8 %."
    assert message.headers["text_from"] == "text/html"
    assert message.attachments == []
    (note,) = message.headers["notes"]
    assert note.startswith("the text/plain body ") and reason in note
    assert note.endswith("Its HTML form is read.")


def test_a_text_plain_form_whose_charset_cannot_be_read_beside_an_amp_form_alone_gives_the_amp_form():
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/alternative; boundary=a",
        body=(
            b"--a\nContent-Type: text/plain; charset=x-klingon\n\nZ\xe9ro risque.\n"
            b"--a\nContent-Type: text/x-amp-html; charset=utf-8\n\n<html amp4email><p>Z\xc3\xa9ro risque.</p>"
            b"</html>\n--a--\n"
        ),
    )

    message = parse_email(raw)

    assert message.body == "Zéro risque." and message.headers["text_from"] == "text/x-amp-html"
    assert message.headers["notes"][0].endswith("Its AMP form is read.") and message.attachments == []


@pytest.mark.parametrize(
    "html",
    [("x-klingon", b"<p>Z\xe9ro risque.</p>"), ("utf-8", b"<p> </p>")],
    ids=["unreadable", "empty"],
)
def test_a_text_plain_form_whose_charset_cannot_be_read_is_refused_without_a_readable_html_form(html):
    raw = alternative_with_charsets(("x-klingon", b"Z\xe9ro risque."), html)

    error = refused(raw)

    assert error.code == "unknown_charset" and "text/plain body" in error.message


def with_third_form(content_type: str, form: bytes, *, charset: str = "utf-8") -> bytes:
    """A multipart/alternative of a text/plain form, a third form `form` and an HTML form that
    says what the text/plain form says (Gmail's order for an AMP mail)."""
    return raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/alternative; boundary=a",
        body=(
            b"--a\nContent-Type: text/plain; charset=utf-8\n\nOur spring letter is here.\n"
            + f"--a\nContent-Type: {content_type}; charset={charset}\n\n".encode()
            + form
            + b"\n--a\nContent-Type: text/html; charset=utf-8\n\n<p>Our spring letter is here.</p>\n--a--\n"
        ),
    )


@pytest.mark.parametrize(
    ("content_type", "kind"), [("text/x-amp-html", "AMP"), ("text/watch-html", "Apple Watch")]
)
def test_an_amp_or_watch_form_that_says_something_else_is_read_after_the_text(content_type, kind):
    # given: a third form of the body that a client shows instead of the HTML one, adding 20 words
    # and more to what the other two forms say (it was dropped unread, not even listed)
    form = (
        b"<html amp4email><body><p>Our spring letter is here.</p><p>Income Plus pays 8% a year and the "
        b"returns are guaranteed by the bank, whatever the markets do, so your savings can only grow "
        b"from here.</p></body></html>"
    )

    # when
    message = parse_email(with_third_form(content_type, form))

    # then: the text, and after it the lines of the form that the text does not say
    assert message.headers["text_from"] == "text/plain"
    assert message.body.startswith("Our spring letter is here.\n\n[Attachment: ")
    assert message.body.endswith(
        "]\nIncome Plus pays 8% a year and the returns are guaranteed by the bank, whatever the markets do, "
        "so your savings can only grow from here."
    )
    assert message.body.count("Our spring letter") == 1
    (read,) = message.attachments
    assert (read["name"], read["content_type"], read["scored"]) == (
        f"{kind} form of the body",
        content_type,
        True,
    )
    assert message.headers["notes"] == [
        f"the {kind} form of the body ({content_type}) says more than its text: the lines of it that the "
        "text does not say are read after it."
    ]


AMP_LETTER = (
    b"<html amp4email><head><style amp-custom>.offer{color:red}</style></head><body>"
    b"<p>Our spring letter is here.</p><p class=offer>Income Plus pays 8% a year and the returns are "
    b"guaranteed by the bank, whatever the markets do, so your savings can only grow from here.</p>"
    b"</body></html>"
)
AMP_CLAIM = (
    "Income Plus pays 8% a year and the returns are guaranteed by the bank, whatever the markets do, so "
    "your savings can only grow from here."
)


def test_a_lone_amp_part_is_the_body_read_without_its_markup():
    message = parse_email(raw_mail("MIME-Version: 1.0", "Content-Type: text/x-amp-html", body=AMP_LETTER))

    assert message.headers["text_from"] == "text/x-amp-html"
    assert message.body == "Our spring letter is here.\n\n" + AMP_CLAIM
    assert "amp-custom" not in message.body and "color" not in message.body


@pytest.mark.parametrize("wrapping", ["attachment", "related"])
def test_an_amp_form_marked_as_a_file_or_inside_multipart_related_is_read_once(wrapping):
    # given: the AMP form as a file (Content-Disposition: attachment: it was neither read nor
    # listed), or as the text of a multipart/related with its image (read as markup, then twice)
    if wrapping == "attachment":
        form = b"Content-Type: text/x-amp-html\nContent-Disposition: attachment\n\n" + AMP_LETTER + b"\n"
    else:
        form = (
            b"Content-Type: multipart/related; boundary=r\n\n--r\nContent-Type: text/x-amp-html\n\n"
            + AMP_LETTER
            + b"\n--r\nContent-Type: image/png\nContent-ID: <logo>\n\nPNG\n--r--\n"
        )
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/alternative; boundary=a",
        body=(
            b"--a\nContent-Type: text/plain\n\nOur spring letter is here.\n--a\n"
            + form
            + b"\n--a\nContent-Type: text/html\n\n<p>Our spring letter is here.</p>\n--a--\n"
        ),
    )

    # when
    message = parse_email(raw)

    # then: the text, and once after it the AMP form's line the text does not say, without markup
    assert message.body.startswith("Our spring letter is here.\n\n[Attachment: ")
    assert message.body.endswith("]\n" + AMP_CLAIM)
    assert message.body.count("Income Plus") == 1 and "amp-custom" not in message.body
    (form,) = message.attachments
    assert (form["name"], form["content_type"], form["scored"]) == (
        "AMP form of the body",
        "text/x-amp-html",
        True,
    )


def test_an_amp_form_that_repeats_the_text_is_neither_read_again_nor_listed():
    form = b"<html amp4email><body><p>Our spring letter is here.</p><button>Reply</button></body></html>"

    message = parse_email(with_third_form("text/x-amp-html", form))

    assert message.body == "Our spring letter is here."
    assert message.attachments == [] and "notes" not in message.headers


def test_an_amp_form_whose_charset_cannot_be_read_is_listed_unreadable_and_the_text_read():
    message = parse_email(with_third_form("text/x-amp-html", b"<p>Z\xe9ro risque.</p>", charset="x-klingon"))

    assert message.body == "Our spring letter is here."
    (form,) = message.attachments
    assert (form["name"], form["scored"], form["unreadable"]) == ("AMP form of the body", False, True)
    assert "declares the charset 'x-klingon'" in form["note"]


def test_ordinary_generated_alternatives_are_read_from_their_text_plain_form_alone():
    # given: traffic texts as every generator style writes them in both forms, with and without a
    # quoted earlier message (the HTML form adds a newsletter's button and footer, Outlook's
    # header block over the quote)
    from scoring.corpus.streams import generate_traffic_messages

    rows = generate_traffic_messages(seed=1, n=80, claim_rate=0.2)
    texts, quotes = [r["body"] for r in rows[:40]], [r["body"] for r in rows[40:]]
    variants = [(s, None) for s in ("outlook", "gmail", "newsletter")] + [("outlook", 1), ("gmail", 1)]

    # when
    read = [
        parse_email(
            mail(text, form="alternative", html_style=style, quoted=quotes[i] if quoted else None).as_bytes()
        )
        for i, text in enumerate(texts)
        for style, quoted in variants
    ]

    # then: the text/plain form, alone, every time
    assert len(read) == 200
    assert {m.headers["text_from"] for m in read} == {"text/plain"}
    assert [m for m in read if m.attachments or "notes" in m.headers] == []


TERMS = b"Returns are guaranteed at 8% a year.\n"
APPLE_FILES = {
    "terms.txt": b'Content-Type: text/plain; charset=us-ascii; name="terms.txt"\n'
    b'Content-Disposition: inline; filename="terms.txt"\n\n' + TERMS,
    "terms.pdf": b'Content-Type: application/pdf; name="terms.pdf"\n'
    b'Content-Disposition: inline; filename="terms.pdf"\nContent-Transfer-Encoding: base64\n\n'
    + base64.encodebytes(pdf_document([[TERMS.decode().strip()]])),
    "chart.png": b'Content-Type: image/png; name="chart.png"\nContent-Id: <chart@apple>\n'
    b'Content-Disposition: inline; filename="chart.png"\nContent-Transfer-Encoding: base64\n\n'
    + base64.encodebytes(b"\x89PNG..."),
}


def apple_mail(file: bytes) -> bytes:
    """Apple Mail's mail with a file between two paragraphs: multipart/alternative > text/plain,
    multipart/mixed > (text/html, the file, text/html)."""
    return (
        b"--a\nContent-Type: text/plain; charset=us-ascii\n\nHi Ann,\nThe terms:\n\nBest,\nBob\n"
        b"--a\nContent-Type: multipart/mixed; boundary=m\n\n"
        b"--m\nContent-Type: text/html; charset=us-ascii\n\n"
        b"<html><body><div>Hi Ann,</div><div>The terms:</div></body></html>\n--m\n" + file + b"--m\n"
        b"Content-Type: text/html; charset=us-ascii\n\n<html><body><div>Best,<br>Bob</div></body></html>\n"
        b"--m--\n--a--\n"
    )


@pytest.mark.parametrize("name", list(APPLE_FILES))
def test_a_file_inside_apple_mail_s_html_form_is_listed_and_read_as_an_attachment(name):
    # given: Apple Mail's multipart/alternative whose HTML form holds the file
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/alternative; boundary=a",
        body=apple_mail(APPLE_FILES[name]),
    )

    # when
    message = parse_email(raw)

    # then: the text once, from the text/plain form; the file listed, and read if it is text or a
    # document with text
    (attachment,) = message.attachments
    assert attachment["name"] == name
    assert attachment["scored"] is (name != "chart.png")
    assert message.body.startswith("Hi Ann,\nThe terms:\n\nBest,\nBob")
    assert message.body.count("Hi Ann") == 1 and message.body.count("Best,") == 1
    assert message.body.endswith("Returns are guaranteed at 8% a year.") is (name != "chart.png")
    assert message.headers["text_from"] == "text/plain"


def test_a_file_inside_the_html_form_of_a_body_wrapped_in_multipart_mixed_is_listed_in_order():
    # given: the same alternative inside multipart/mixed, with a file after it (a signed mail's
    # wrapper, or a client that adds one)
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=o",
        body=(
            b"--o\nContent-Type: multipart/alternative; boundary=a\n\n"
            + apple_mail(APPLE_FILES["terms.txt"])
            + b'--o\nContent-Type: text/plain; name="notes.txt"\n'
            b'Content-Disposition: attachment; filename="notes.txt"\n\nZero risk.\n--o--\n'
        ),
    )

    message = parse_email(raw)

    assert [(a["name"], a["scored"]) for a in message.attachments] == [
        ("terms.txt", True),
        ("notes.txt", True),
    ]
    assert message.body.count("Hi Ann") == 1
    assert message.body.endswith(
        "Returns are guaranteed at 8% a year.\n\n[Attachment: notes.txt · text/plain · 10 bytes]\nZero risk."
    )


def test_a_bounce_lists_its_delivery_status_as_one_part_and_reads_the_returned_message():
    # given: a DSN (multipart/report): the notice, message/delivery-status, the returned message
    raw = raw_mail(
        "Subject: Undelivered Mail Returned to Sender",
        "Content-Type: multipart/report; report-type=delivery-status; boundary=r",
        body=(
            b"--r\nContent-Type: text/plain\n\nYour message could not be delivered.\n"
            b"--r\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.bank.example\n\n"
            b"Final-Recipient: rfc822; ann@client.example\nAction: failed\nStatus: 5.1.1\n\n"
            b"--r\nContent-Type: message/rfc822\n\nFrom: Bob <bob@bank.example>\nSubject: Offer\n\n"
            b"Guaranteed returns.\n--r--\n"
        ),
    )

    message = parse_email(raw)

    status, returned = message.attachments
    assert (status["content_type"], status["scored"], status["size"] > 0) == (
        "message/delivery-status",
        False,
        True,
    )
    assert (returned["name"], returned["scored"]) == ("Offer.eml", True)
    assert message.body.startswith("Your message could not be delivered.")
    assert message.body.endswith("Guaranteed returns.")


ENRICHED = (
    b"<bold>Hi Ann,</bold>\n\nOur <italic>Income Plus</italic> fund\npays 8% a year,\n"
    b"<color><param>red</param>guaranteed</color>. <<No small print>\n\n"
    b"<excerpt>Is my capital safe?</excerpt>\n"
)


def test_a_text_enriched_mail_is_read_without_its_formatting_not_refused():
    # given: a mail whose only part is text/enriched (RFC 1896), quoting the question it answers
    raw = raw_mail("MIME-Version: 1.0", "Content-Type: text/enriched; charset=us-ascii", body=ENRICHED)

    # when
    message = parse_email(raw)

    # then: its words, without commands or parameters; the excerpt as quoted lines
    assert message.body == (
        "Hi Ann,\nOur Income Plus fund pays 8% a year, guaranteed. <No small print>\n> Is my capital safe?"
    )
    assert message.headers["text_from"] == "text/enriched"
    assert message.attachments == []
    assert kinds(message.body) == ["body", "quoted"]


@pytest.mark.parametrize("content_type", ["text/x-markdown", "text/markdown", "text/xml", "text/vcard"])
def test_a_mail_whose_only_part_is_another_text_type_is_read_as_written(content_type):
    raw = raw_mail(
        "MIME-Version: 1.0",
        f"Content-Type: {content_type}; charset=utf-8",
        body=b"**Income Plus**: returns are *guaranteed*.\n",
    )

    message = parse_email(raw)

    assert "**Income Plus**: returns are *guaranteed*." in message.body


def test_an_rtf_part_is_listed_as_not_read_and_alone_is_refused_naming_it():
    rtf = b"{\\rtf1\\ansi{\\fonttbl\\f0 Calibri;}\\f0 Returns are \\b guaranteed\\b0.\\par}\n"
    with_text = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: text/plain\n\nSee the terms.\n"
            b"--m\nContent-Type: text/rtf; name=terms.rtf\n\n" + rtf + b"--m--\n"
        ),
    )

    (terms,) = parse_email(with_text).attachments
    error = refused(raw_mail("Content-Type: text/rtf", body=rtf))

    assert (terms["name"], terms["scored"]) == ("terms.rtf", False)
    assert "RTF" in terms["note"]
    assert error.code == "no_text_part" and "text/rtf" in error.message


# --- bad input ----------------------------------------------------------------------------------


def refused(raw: bytes, **limits) -> SourceError:
    with pytest.raises(SourceError) as caught:
        parse_email(raw, limits=MailLimits(**limits))
    return caught.value


def test_a_malformed_mime_structure_is_refused():
    raw = raw_mail('Content-Type: multipart/mixed; boundary="b1"', body=b"--other\n\nno such boundary\n")

    error = refused(raw)

    assert error.code == "malformed_mime"
    assert "boundary" in error.message


def test_a_message_with_no_text_part_is_refused_naming_its_parts():
    raw = raw_mail("Content-Type: image/png", "Content-Transfer-Encoding: base64", body=b"iVBORw0KGgo=\n")

    error = refused(raw)

    assert error.code == "no_text_part" and "image/png" in error.message


def test_an_unknown_charset_that_is_not_utf8_is_refused():
    raw = raw_mail("Content-Type: text/plain; charset=x-klingon", body=b"caf\xe9\n")

    assert refused(raw).code == "unknown_charset"


def test_a_lying_charset_is_refused_naming_the_bad_byte():
    raw = raw_mail("Content-Type: text/plain; charset=utf-8", body="café".encode("latin-1"))

    error = refused(raw)

    assert error.code == "charset_mismatch" and "0xE9" in error.message


def attached_with_charset(content_type: str, name: str, charset: str, data: bytes) -> bytes:
    """A text/plain body, then `data` attached as `content_type` declaring `charset`."""
    return raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: text/plain; charset=us-ascii\n\nPlease see the attached.\n--m\n"
            + f'Content-Type: {content_type}; charset={charset}; name="{name}"\n'.encode()
            + f'Content-Disposition: attachment; filename="{name}"\n\n'.encode()
            + data
            + b"\n--m--\n"
        ),
    )


LATIN_1_TEXTS = {
    "text/plain": "Capital garanti, zéro risque.",
    "text/html": "<p>Capital garanti, <b>zéro</b> risque.</p>",
    "text/x-log": "zéro risque",
    "text/calendar": "BEGIN:VEVENT\r\nSUMMARY:Séminaire\r\nDESCRIPTION:Zéro risque.\r\nEND:VEVENT\r\n",
    "application/ics": "BEGIN:VEVENT\r\nSUMMARY:Séminaire\r\nDESCRIPTION:Zéro risque.\r\nEND:VEVENT\r\n",
}


@pytest.mark.parametrize(
    "charset, why",
    [
        ("x-klingon", "declares the charset 'x-klingon', which this server does not know"),
        ("utf-8", "byte 0xE9 at offset"),
    ],
    ids=["unknown", "lying"],
)
@pytest.mark.parametrize("content_type", sorted(LATIN_1_TEXTS))
def test_an_attachment_whose_charset_cannot_be_read_is_listed_as_not_scored_and_the_message_imports(
    content_type, charset, why
):
    # given: Latin-1 bytes attached under a charset this server does not know, or under utf-8
    name = {"text/html": "offer.html", "text/x-log": "run.log"}.get(content_type, "terms.txt")
    if content_type in ("text/calendar", "application/ics"):
        name = "invite.ics"
    raw = attached_with_charset(content_type, name, charset, LATIN_1_TEXTS[content_type].encode("latin-1"))

    # when
    message = parse_email(raw)

    # then: the text is read and the attachment listed, not scored, saying why
    assert message.body == "Please see the attached."
    (attachment,) = message.attachments
    assert (attachment["name"], attachment["scored"]) == (name, False)
    assert attachment["note"].startswith("not scored: the ")
    assert f"{name!r} declares the charset" in attachment["note"] and why in attachment["note"]
    assert attachment["unreadable"] is True  # text that could not be read: the import reports it


def _forward(inner: bytes) -> bytes:
    """A mail that says "FYI, see below." and attaches `inner` as message/rfc822."""
    return raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: text/plain\n\nFYI, see below.\n--m\nContent-Type: message/rfc822\n\n"
            + inner
            + b"\n--m--\n"
        ),
    )


def test_an_attached_message_whose_text_s_charset_cannot_be_read_is_listed_as_not_scored():
    # given: a forward as attachment whose text declares a charset this server does not know
    inner = (
        b"From: Ann <ann@client.example>\nMessage-ID: <inner@client.example>\nSubject: Offer\n"
        b"Content-Type: text/plain; charset=x-klingon\n\n" + "Zéro risque.".encode("latin-1")
    )
    raw = _forward(inner)

    # when
    message = parse_email(raw)

    # then
    assert message.body == "FYI, see below."
    (forward,) = message.attachments
    assert (forward["name"], forward["scored"]) == ("Offer.eml", False)
    assert forward["note"].startswith("not scored: its text cannot be read: the text/plain body declares")
    assert "'x-klingon'" in forward["note"]


@pytest.mark.parametrize(
    "charset, html",
    [("x-foo", "<p>Zéro risque.</p>".encode("latin-1")), ("utf-8", "<p>Zéro risque.</p>".encode("latin-1"))],
    ids=["unknown", "mismatch"],
)
def test_an_attached_message_with_an_empty_text_plain_form_and_an_unreadable_html_form_is_not_scored(
    charset, html
):
    # given: a forward whose text/plain form is empty and whose HTML form cannot be read
    inner = (
        b"From: Ann <ann@client.example>\nMessage-ID: <inner@client.example>\nSubject: Offer\n"
        b"MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=a\n\n"
        b"--a\nContent-Type: text/plain; charset=utf-8\n\n\n"
        b"--a\nContent-Type: text/html; charset=" + charset.encode() + b"\n\n" + html + b"\n--a--\n"
    )
    raw = _forward(inner)

    # when: not refused as a whole
    message = parse_email(raw)

    # then: the forward is listed, not scored, saying why
    assert message.body == "FYI, see below."
    (forward,) = message.attachments
    assert (forward["name"], forward["scored"]) == ("Offer.eml", False)
    assert forward["note"].startswith("not scored: its text cannot be read: the HTML form of the body")


def test_a_message_whose_only_text_is_an_attachment_with_an_unreadable_charset_is_refused_for_it():
    raw = raw_mail(
        "MIME-Version: 1.0",
        'Content-Type: text/plain; charset=x-klingon; name="terms.txt"',
        'Content-Disposition: attachment; filename="terms.txt"',
        body="Zéro risque.".encode("latin-1"),
    )

    error = refused(raw)

    assert error.code == "unknown_charset" and "'terms.txt'" in error.message


def test_the_body_s_own_unreadable_charset_still_refuses_the_message_even_with_attachments():
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: text/plain; charset=x-klingon\n\nZ\xe9ro risque.\n"
            b'--m\nContent-Type: text/plain; name="terms.txt"\n\nTerms.\n--m--\n'
        ),
    )

    assert refused(raw).code == "unknown_charset"


def test_a_25_mb_attachment_is_refused_by_the_message_size_limit_before_parsing():
    error = refused(big_attachment_mail(25))

    assert error.code == "message_too_large"
    assert "the limit is 25.0 MB" in error.message


def test_an_attachment_over_its_own_limit_is_refused_by_name():
    raw = with_attachment("video.bin", "application/octet-stream", os.urandom(3000))

    error = refused(raw, max_attachment_bytes=2000)

    assert error.code == "attachment_too_large" and "video.bin" in error.message


def test_a_nested_message_rfc822_loop_is_refused():
    inner = b"From: a@bank.example\nMessage-ID: <raw@bank.example>\nSubject: x\n\nhello\n"
    raw = raw_mail(
        "Content-Type: multipart/mixed; boundary=b1",
        body=b"--b1\nContent-Type: text/plain\n\nsee below\n--b1\nContent-Type: message/rfc822\n\n"
        + inner
        + b"\n--b1--\n",
    )

    assert refused(raw).code == "message_loop"


def test_messages_nested_past_the_depth_limit_and_a_deep_nesting_bomb_are_refused():
    def nested(depth: int) -> bytes:
        raw = b"From: a@bank.example\nSubject: x\nContent-Type: text/plain\n\nhello\n"
        for i in range(depth):
            raw = b"From: a@bank.example\nSubject: x%d\nContent-Type: message/rfc822\n\n" % i + raw
        return raw

    assert refused(nested(8), max_depth=5).code == "nested_too_deep"
    assert refused(nested(5000)).code == "too_many_parts"  # counted on the bytes, never parsed


def test_a_zip_bomb_attachment_is_refused():
    error = refused(with_attachment("report.zip", "application/zip", zip_bomb()))

    assert error.code == "archive_bomb" and "report.zip" in error.message


def test_bytes_with_no_header_are_not_an_email():
    assert refused(b"just some words\nand more\n").code == "not_an_email"


# --- base64 the standard library cannot decode ------------------------------------------------

BASE64_TEXT = "Your fund is guaranteed to pay 8% a year, every single year, whatever happens."


def base64_mail(body: bytes) -> bytes:
    return raw_mail("Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64", body=body)


def test_base64_with_one_letter_too_many_is_decoded_not_shown_as_its_letters():
    # 4k+1 letters: the standard library gives the encoded letters back as the "decoded" text.
    encoded = base64.b64encode(BASE64_TEXT.encode())
    assert not encoded.endswith(b"=")  # a whole number of groups, so one more letter is one too many
    cut = encoded + b"Q"

    message = parse_email(base64_mail(cut + b"\n"))

    assert message.body == BASE64_TEXT
    assert message.headers["notes"] == [
        "the text/plain body: its base64 ends with one letter too many, which was dropped."
    ]


def test_plain_text_under_a_base64_label_is_read_as_written_with_a_note():
    for text in ("not base64 at all, the fund is guaranteed!", "Hello there friend"):
        message = parse_email(base64_mail(text.encode() + b"\n"))

        assert message.body == text
        assert message.headers["notes"] == [
            "the text/plain body: it is declared base64 but is not base64; read as written."
        ]


def test_a_stray_character_in_real_base64_is_skipped_and_noted():
    encoded = base64.encodebytes(BASE64_TEXT.encode())

    message = parse_email(base64_mail(encoded[:40] + b"*" + encoded[40:]))

    assert message.body == BASE64_TEXT
    assert message.headers["notes"] == [
        "the text/plain body: 1 character that is not base64 skipped while decoding it."
    ]


def test_a_text_attachment_under_a_wrong_base64_label_is_read_as_written():
    raw = raw_mail(
        "Content-Type: multipart/mixed; boundary=b1",
        body=b"--b1\nContent-Type: text/plain\n\nSee the note attached.\n--b1\nContent-Type: text/plain; "
        b'name="note.txt"\nContent-Disposition: attachment; filename="note.txt"\n'
        b"Content-Transfer-Encoding: base64\n\nreturns are guaranteed, no risk at all\n--b1--\n",
    )

    message = parse_email(raw)

    assert "returns are guaranteed, no risk at all" in message.body
    assert message.headers["notes"] == [
        "the attachment 'note.txt': it is declared base64 but is not base64; read as written."
    ]


def test_a_calendar_invitation_sent_alone_is_read_for_its_wording_not_refused():
    # given: an invitation with no text/plain or text/html part, its description folded and escaped
    raw = raw_mail(
        "Subject: Invitation: Income seminar",
        "Content-Type: text/calendar; charset=utf-8; method=REQUEST",
        body=(
            b"BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nDTSTART:20250310T090000Z\r\n"
            b"SUMMARY:Income seminar\r\nLOCATION:Room 4\\, Harbor House\r\n"
            b"DESCRIPTION:Our bond pays 7%\\, guaranteed.\\nZero risk to your capi\r\n tal.\r\n"
            b"UID:abc@bank.example\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        ),
    )

    # when
    message = parse_email(raw)

    # then
    (invitation,) = message.attachments
    assert (invitation["name"], invitation["content_type"], invitation["scored"]) == (
        "invitation.ics",
        "text/calendar",
        True,
    )
    assert message.body.endswith(
        "Title: Income seminar\nLocation: Room 4, Harbor House\n"
        "Description: Our bond pays 7%, guaranteed.\nZero risk to your capital."
    )
    assert "DTSTART" not in message.body and "UID" not in message.body


def test_a_calendar_invitation_sent_alone_as_calendar_and_ics_forms_is_read_once_not_refused():
    # given: a top-level multipart/alternative of text/calendar and its application/ics copy,
    # with no text/plain or text/html part
    ical = (
        b"BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nDTSTART:20250310T090000Z\r\n"
        b"SUMMARY:Income seminar\r\nDESCRIPTION:Our bond pays 7%\\, guaranteed.\r\n"
        b"UID:abc@bank.example\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    raw = raw_mail(
        "Subject: Invitation: Income seminar",
        "MIME-Version: 1.0",
        "Content-Type: multipart/alternative; boundary=a",
        body=(
            b"--a\nContent-Type: text/calendar; charset=utf-8; method=REQUEST\n\n" + ical + b"--a\n"
            b'Content-Type: application/ics; name="invite.ics"\n'
            b'Content-Disposition: attachment; filename="invite.ics"\n'
            b"Content-Transfer-Encoding: base64\n\n" + base64.encodebytes(ical) + b"--a--\n"
        ),
    )

    # when
    message = parse_email(raw)

    # then: its wording scored once, as the invitation; the copy listed, not scored again
    assert message.body.count("Description: Our bond pays 7%, guaranteed.") == 1
    assert message.body.endswith("Title: Income seminar\nDescription: Our bond pays 7%, guaranteed.")
    assert [(a["name"], a["content_type"], a["scored"]) for a in message.attachments] == [
        ("invitation.ics", "text/calendar", True),
        ("invite.ics", "application/ics", False),
    ]


INVITE = (
    b"BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nDTSTART:20250310T090000Z\r\n"
    b"SUMMARY:Income seminar\r\nDESCRIPTION:Our bond pays 7%\\, guaranteed.\r\n"
    b"UID:abc@bank.example\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)


@pytest.mark.parametrize("content_type", ["application/ics", "application/octet-stream"])
def test_an_ics_attachment_with_no_text_calendar_part_is_read_for_its_wording(content_type):
    # given: a short text and the invitation as invite.ics only, no text/calendar anywhere
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: text/plain\n\nSee the invite.\n--m\n"
            b"Content-Type: " + content_type.encode() + b'; name="invite.ics"\n'
            b'Content-Disposition: attachment; filename="invite.ics"\n'
            b"Content-Transfer-Encoding: base64\n\n" + base64.encodebytes(INVITE) + b"--m--\n"
        ),
    )

    # when
    message = parse_email(raw)

    # then: its wording is scored, as an invitation sent as text/calendar is
    (invite,) = message.attachments
    assert (invite["name"], invite["content_type"], invite["scored"]) == ("invite.ics", content_type, True)
    assert message.body.startswith("See the invite.")
    assert message.body[invite["start"] : invite["end"]].endswith(
        "Title: Income seminar\nDescription: Our bond pays 7%, guaranteed."
    )
    assert "DTSTART" not in message.body


def google_invitation(
    copy: bytes, lines: tuple[bytes, ...] = (b"Income seminar", b"Our bond pays 7%, guaranteed.")
) -> bytes:
    """Google Calendar's invitation: multipart/mixed > (multipart/alternative > text/plain,
    text/html, text/calendar), then `copy` as application/ics (invite.ics); the text/plain and
    HTML forms say `lines`."""
    return raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/mixed; boundary=m",
        body=(
            b"--m\nContent-Type: multipart/alternative; boundary=a\n\n"
            b"--a\nContent-Type: text/plain\n\n" + b"\n".join(lines) + b"\n"
            b"--a\nContent-Type: text/html\n\n" + b"".join(b"<p>%s</p>" % line for line in lines) + b"\n"
            b"--a\nContent-Type: text/calendar; charset=UTF-8; method=REQUEST\n"
            b"Content-Transfer-Encoding: 7bit\n\n" + INVITE + b"--a--\n"
            b'--m\nContent-Type: application/ics; name="invite.ics"\n'
            b'Content-Disposition: attachment; filename="invite.ics"\n'
            b"Content-Transfer-Encoding: base64\n\n" + base64.encodebytes(copy) + b"--m--\n"
        ),
    )


def test_google_s_ics_copy_of_its_text_calendar_part_is_listed_not_read_again():
    message = parse_email(google_invitation(INVITE))

    # the text says all the invitation says: the text/calendar form is listed, not read again
    assert message.body == "Income seminar\nOur bond pays 7%, guaranteed."
    invitation, copy = message.attachments
    assert (invitation["name"], invitation["scored"]) == ("invitation.ics", False)
    assert invitation["note"] == "not scored: the message's text says what the invitation says"
    assert (copy["name"], copy["scored"]) == ("invite.ics", False)
    assert "copy of the invitation" in copy["note"]


def test_an_ics_attachment_that_says_more_than_the_text_calendar_part_is_read():
    other = INVITE.replace(b"Our bond pays 7%\\, guaranteed.", b"Zero risk to your capital.")

    message = parse_email(google_invitation(other))

    invitation, copy = message.attachments
    assert (invitation["scored"], copy["scored"]) == (False, True)
    assert message.body.endswith("Description: Zero risk to your capital.")


def test_the_calendar_form_of_the_body_is_read_for_what_the_text_does_not_say_once():
    # given: Google's invitation whose text gives the title and time, not the description
    raw = google_invitation(INVITE, lines=(b"Income seminar", b"Tuesday 10 March 2025 09:00 - 10:00 (GMT)"))

    # when
    message = parse_email(raw)

    # then: the description is read once, from the text/calendar form; its copy is not read
    invitation, copy = message.attachments
    assert (invitation["name"], invitation["content_type"], invitation["scored"]) == (
        "invitation.ics",
        "text/calendar",
        True,
    )
    assert message.body[invitation["start"] : invitation["end"]].endswith(
        "]\nDescription: Our bond pays 7%, guaranteed."
    )
    assert message.body.count("Our bond pays 7%") == 1 and message.body.count("Income seminar") == 1
    assert (copy["name"], copy["scored"]) == ("invite.ics", False)


def test_outlook_s_invitation_whose_text_is_its_description_reads_only_its_title_from_the_calendar():
    # given: Outlook's multipart/alternative: the description as text/plain and HTML, then
    # text/calendar, whose title (SUMMARY) the text does not give
    ical = (
        b"BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\n"
        b"SUMMARY;LANGUAGE=en-GB:Guaranteed 7% income\r\n"
        b"DESCRIPTION;LANGUAGE=en-GB:Please join us to hear about the bond.\\n\r\n"
        b"DTSTART:20250310T090000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/alternative; boundary=a",
        body=(
            b"--a\nContent-Type: text/plain; charset=utf-8\n\nPlease join us to hear about the bond.\n"
            b"--a\nContent-Type: text/html; charset=utf-8\n\n<p>Please join us to hear about the bond.</p>\n"
            b"--a\nContent-Type: text/calendar; charset=utf-8; method=REQUEST\n\n" + ical + b"--a--\n"
        ),
    )

    # when
    message = parse_email(raw)

    # then
    (invitation,) = message.attachments
    assert invitation["scored"] is True
    assert message.body.startswith("Please join us to hear about the bond.\n\n[Attachment: invitation.ics")
    assert message.body.endswith("]\nTitle: Guaranteed 7% income")
    assert message.body.count("Please join us") == 1


def test_a_bodiless_multipart_alternative_of_two_invitations_reads_only_the_last_form():
    # given: one invitation in two forms (RFC 2046: the last is the richest), no text part
    richer = INVITE.replace(b"END:VEVENT", b"LOCATION:Room 4\r\nEND:VEVENT")
    raw = raw_mail(
        "MIME-Version: 1.0",
        "Content-Type: multipart/alternative; boundary=a",
        body=(
            b"--a\nContent-Type: text/calendar; method=PUBLISH; name=publish.ics\n\n" + INVITE + b"--a\n"
            b"Content-Type: text/calendar; method=REQUEST; name=request.ics\n\n" + richer + b"--a--\n"
        ),
    )

    # when
    message = parse_email(raw)

    # then: its wording once, from the last form; the first listed, not read
    assert message.body.count("Our bond pays 7%, guaranteed.") == 1
    assert message.body.endswith("Location: Room 4")
    first, last = message.attachments
    assert (first["name"], first["scored"], last["name"], last["scored"]) == (
        "publish.ics",
        False,
        "request.ics",
        True,
    )
    assert first["note"] == "not scored: another form (multipart/alternative) of request.ics, which is read"


def test_an_alternative_after_the_body_reads_its_text_plain_form_once():
    # given: a text, then a second multipart/alternative whose two forms are text/plain (a client
    # that labels both so) and text/plain again
    raw = _text_then_alternative(
        b"Content-Type: text/plain; format=flowed\n\nZero risk to your capital.",
        b"Content-Type: text/plain\n\nZero risk to your capital.",
    )

    message = parse_email(raw)

    assert message.body.count("Zero risk to your capital.") == 1
    assert [(a["name"], a["scored"]) for a in message.attachments] == [("part-1", True), ("part-2", False)]


@pytest.mark.parametrize(
    "headers, body",
    [
        (
            (
                'Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name="smime.p7m"',
                "Content-Transfer-Encoding: base64",
            ),
            b"MIAGCSqGSIb3DQEHA6CAMIACAQAxggFA\n",
        ),
        (
            ('Content-Type: multipart/encrypted; protocol="application/pgp-encrypted"; boundary=b1',),
            b"--b1\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n--b1\n"
            b"Content-Type: application/octet-stream\n\n-----BEGIN PGP MESSAGE-----\nhQEMA\n"
            b"-----END PGP MESSAGE-----\n--b1--\n",
        ),
    ],
    ids=["smime", "pgp"],
)
def test_an_encrypted_message_is_refused_as_encrypted_not_as_having_no_text(headers, body):
    error = refused(raw_mail(*headers, body=body))

    assert error.code == "encrypted" and "without the recipient's key" in error.message


def test_raw_8bit_and_mislabelled_encoded_headers_are_read_as_text_not_replacement_characters():
    raw = (
        b"From: J\xfcrgen M\xfcller <jm@bank.example>\nTo: Ren\xe9e <r@x.example>, bob@y.example\n"
        b"Cc: =?utf-8?q?Ren=E9e?= <r@x.example>\nSubject: =?utf-8?q?Geb=FChren_f=FCr?= 2025\n"
        b"Message-ID: <h@bank.example>\nContent-Type: text/plain; charset=utf-8\n\nhello\n"
    )

    message = parse_email(raw)

    assert message.subject == "Gebühren für 2025"
    assert message.headers["from"] == "Jürgen Müller <jm@bank.example>"
    assert message.headers["to"] == ["Renée <r@x.example>", "bob@y.example"]
    assert message.headers["cc"] == ["Renée <r@x.example>"]
    assert message.sender == "jm@bank.example"


def test_a_header_that_is_fine_is_left_as_the_standard_library_reads_it():
    raw = 'From: "Müller, Jürgen" <jm@bank.example>\nSubject: =?iso-8859-1?q?Geb=FChren?= ok\n\nhi\n'

    message = parse_email(raw.encode())

    assert (
        message.subject == "Gebühren ok" and message.headers["from"] == '"Müller, Jürgen" <jm@bank.example>'
    )


def test_an_inline_pgp_clear_signed_text_is_read_without_its_armour():
    signed = (
        "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n"
        "Hello Ann,\n\nThe fund is guaranteed to pay 8%.\n\n- -- \nBob\n"
        "-----BEGIN PGP SIGNATURE-----\n\niQEzBAEBCAAdFiEE0x1qPq8kQ2z4VfE8Wn2bq9Xh0cQFAmVb\n=Ab1c\n"
        "-----END PGP SIGNATURE-----\n"
    )

    message = parse_email(raw_mail("Content-Type: text/plain; charset=utf-8", body=signed.encode()))

    assert message.body == "Hello Ann,\n\nThe fund is guaranteed to pay 8%.\n\n-- \nBob"
    assert message.headers["notes"] == [
        "the text/plain body: inline PGP signature armour removed (the signature is not verified)."
    ]


def test_a_pgp_header_line_quoted_in_prose_is_left_alone():
    text = "Our key starts with -----BEGIN PGP SIGNED MESSAGE----- in the middle of a line.\n"

    assert parse_email(raw_mail("Content-Type: text/plain", body=text.encode())).body == text.strip()


def test_base64_lines_padded_with_trailing_spaces_are_decoded_without_a_note():
    encoded = base64.encodebytes((BASE64_TEXT * 5).encode())
    padded = b"\n".join(line + b"  " for line in encoded.splitlines()) + b"\n"

    message = parse_email(base64_mail(padded))

    assert message.body == BASE64_TEXT * 5 and "notes" not in message.headers


def test_two_base64_texts_joined_end_to_end_are_both_read():
    joined = base64.b64encode(b"Guaranteed returns.") + base64.b64encode(b" No risk at all, promise.")

    message = parse_email(base64_mail(joined + b"\n"))

    assert message.body == "Guaranteed returns. No risk at all, promise."
    assert message.headers["notes"] == [
        "the text/plain body: 2 base64 texts joined end to end; each was decoded."
    ]


def test_a_header_mixing_raw_bytes_and_encoded_words_and_a_quoted_name_with_a_comma():
    raw = (
        b'From: a@bank.example\nTo: "M\xfcller, Hans" <h@y.example>, '
        b"=?iso-8859-1?q?M=FCller?= <m@y.example>, \xe9t\xe9 <e@z.example>\n"
        b"Subject: Rendite garantiert f\xfcr Sie =?utf-8?q?=E2=82=AC_sicher?=\n"
        b"Message-ID: <mixed@bank.example>\n\nhi\n"
    )

    message = parse_email(raw)

    assert message.subject == "Rendite garantiert für Sie € sicher"
    assert message.headers["to"] == [
        '"Müller, Hans" <h@y.example>',
        "Müller <m@y.example>",
        "été <e@z.example>",
    ]
    assert message.participants == ("a@bank.example", "e@z.example", "h@y.example", "m@y.example")
