"""PDF and Office attachments (scoring.sources.documents): their words are read as the message's,
and a document whose text cannot be read is listed as such (it sends the message to review)."""

from __future__ import annotations

import io
import time
import zipfile

import pypdf
import pytest

from scoring.sources.documents import (
    EXCEL,
    PDF,
    POWERPOINT,
    WORD,
    DocumentLimits,
    UnreadableDocument,
    document_kind,
    document_text,
    pdf_document,
)
from scoring.sources.errors import SourceError
from scoring.sources.mail import MailLimits, parse_email
from scoring.sources.mailgen import AttachmentSpec, factsheet_pdf
from tests.scoring.sources.mail_fixtures import mail

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
A = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
S = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def office(parts: dict[str, str], *, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        for name, xml in parts.items():
            archive.writestr(name, xml)
    return buffer.getvalue()


def docx(body: str, **parts: str) -> bytes:
    document = f'<?xml version="1.0" encoding="UTF-8"?><w:document {W}><w:body>{body}</w:body></w:document>'
    return office({"word/document.xml": document, **parts})


def paragraph(*runs: str) -> str:
    return "<w:p>" + "".join(f"<w:r><w:t xml:space='preserve'>{r}</w:t></w:r>" for r in runs) + "</w:p>"


def read(data: bytes, kind: str, **limits) -> str:
    return document_text(data, kind, name="file", limits=DocumentLimits(**limits))


def encrypted(data: bytes, user_password: str) -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password, owner_password="owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


# --- which parts are documents -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "name", "kind"),
    [
        ("application/pdf", "terms.pdf", PDF),
        ("application/pdf", "", PDF),
        ("application/octet-stream", "Terms.PDF", PDF),
        (DOCX_TYPE, "offer.docx", WORD),
        ("application/octet-stream", "offer.docm", WORD),
        ("application/vnd.openxmlformats-officedocument.presentationml.presentation", "deck", POWERPOINT),
        ("application/octet-stream", "prices.xlsx", EXCEL),
        ("application/msword", "old.doc", None),  # the binary Word format: not read
        ("image/png", "scan.pdf", None),  # the type says image: the name does not make it a PDF
        ("application/octet-stream", "data.bin", None),
    ],
)
def test_a_document_is_known_by_its_type_or_a_generic_type_and_its_name(content_type, name, kind):
    assert document_kind(content_type, name) == kind


# --- PDF -----------------------------------------------------------------------------------------


def test_a_pdf_s_words_are_read_page_after_page():
    data = pdf_document([["Fund factsheet", "Page one."], ["Returns are guaranteed at 8% a year."]])

    assert read(data, PDF) == "Fund factsheet\nPage one.\n\nReturns are guaranteed at 8% a year."


def test_a_pdf_with_no_text_layer_has_no_text_and_a_broken_one_is_unreadable():
    assert read(pdf_document([[]]), PDF) == ""
    with pytest.raises(UnreadableDocument, match="not a readable PDF"):
        read(b"%PDF-1.4 binary", PDF)
    with pytest.raises(UnreadableDocument, match="not a readable PDF"):
        read(factsheet_pdf()[:200], PDF)  # cut short in transport


def test_a_pdf_that_needs_a_password_is_unreadable_and_one_with_only_an_owner_password_is_read():
    data = pdf_document([["Zero risk, capital guaranteed."]])

    with pytest.raises(UnreadableDocument, match="password-protected"):
        read(encrypted(data, "secret"), PDF)
    # an owner password only restricts printing or editing: anyone can open and read it
    assert read(encrypted(data, ""), PDF) == "Zero risk, capital guaranteed."


def test_a_pdf_over_the_page_or_text_limit_is_unreadable_not_read_in_part():
    data = pdf_document([["one"], ["two"], ["three"]])

    assert read(data, PDF, max_pages=3) == "one\n\ntwo\n\nthree"
    with pytest.raises(UnreadableDocument, match="a PDF of 3 pages; no more than 2 are read"):
        read(data, PDF, max_pages=2)
    with pytest.raises(UnreadableDocument, match="longer than 10 characters"):
        read(data, PDF, max_chars=10)


# --- Office Open XML -----------------------------------------------------------------------------


def test_a_word_document_s_body_tables_text_boxes_headers_and_footnotes_are_read_not_deleted_text():
    body = (
        paragraph("Dear client,")
        + "<w:p><w:r><w:t>Capital is</w:t></w:r><w:r><w:tab/><w:t>100% protected</w:t><w:br/>"
        + "<w:t>and returns are guaranteed.</w:t></w:r>"
        + "<w:del><w:r><w:delText>Past performance is no guide.</w:delText></w:r></w:del></w:p>"
        + "<w:tbl><w:tr><w:tc>"
        + paragraph("Yield")
        + "</w:tc><w:tc>"
        + paragraph("8%")
        + "</w:tc></w:tr></w:tbl>"
        + "<w:p><w:r><w:fldChar/><w:instrText>HYPERLINK x</w:instrText>"
        + "<w:pict><w:txbxContent>"
        + paragraph("In a text box: zero risk.")
        + "</w:txbxContent></w:pict></w:r></w:p>"
    )
    header = f"<w:hdr {W}>{paragraph('Acme Wealth')}</w:hdr>"
    footnotes = f"<w:footnotes {W}><w:footnote>{paragraph('SEC-approved.')}</w:footnote></w:footnotes>"

    text = read(docx(body, **{"word/header1.xml": header, "word/footnotes.xml": footnotes}), WORD)

    assert text == (
        "Dear client,\nCapital is\t100% protected\nand returns are guaranteed.\nYield\n8%\n"
        "In a text box: zero risk.\n\nAcme Wealth\n\nSEC-approved."
    )


def test_a_presentation_s_slides_are_read_in_order_then_the_speaker_notes():
    slide = '<p:sld xmlns:p="p" {a}><a:p><a:r><a:t>{text}</a:t></a:r></a:p></p:sld>'
    parts = {
        "ppt/presentation.xml": "<p/>",
        "ppt/slides/slide10.xml": slide.format(a=A, text="Slide ten"),
        "ppt/slides/slide2.xml": slide.format(a=A, text="Slide two: it will double by March"),
        "ppt/notesSlides/notesSlide1.xml": slide.format(a=A, text="Say: no risk at all"),
        "ppt/slideLayouts/slideLayout1.xml": slide.format(a=A, text="Click to add title"),
    }

    text = read(office(parts), POWERPOINT)

    assert text == "Slide two: it will double by March\n\nSlide ten\n\nSay: no risk at all"


def test_a_workbook_s_text_cells_are_read_not_its_numbers():
    shared = f"<sst {S}><si><t>Fund</t></si>"
    shared += "<si><r><t>Guaranteed </t></r><r><t>5%</t></r><rPh><t>x</t></rPh></si></sst>"
    sheet = f'<worksheet {S}><sheetData><row><c t="s"><v>0</v></c><c><v>1234.5</v></c>'
    sheet += '<c t="inlineStr"><is><t>Risk-free</t></is></c></row></sheetData></worksheet>'
    parts = {"xl/workbook.xml": "<w/>", "xl/sharedStrings.xml": shared, "xl/worksheets/sheet1.xml": sheet}

    assert read(office(parts), EXCEL) == "Fund\nGuaranteed 5%\n\nRisk-free"


def test_an_office_file_that_is_encrypted_broken_or_not_what_it_says_is_unreadable():
    with pytest.raises(UnreadableDocument, match=r"password-protected: .* \(an encrypted Word document\)"):
        read(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), WORD)
    with pytest.raises(UnreadableDocument, match="not a readable Word document"):
        read(b"PK\x03\x04 not a zip", WORD)
    with pytest.raises(UnreadableDocument, match=r"it has no word/document\.xml"):
        read(office({"xl/workbook.xml": "<w/>"}), WORD)
    with pytest.raises(UnreadableDocument, match=r"document\.xml of the Word document is not readable XML"):
        read(office({"word/document.xml": "<w:document"}), WORD)


def test_an_office_file_is_held_to_the_zip_limits_and_its_entities_are_never_expanded():
    # a zip bomb by another name is refused as one
    bomb = office({"word/document.xml": f"<w:document {W}>" + " " * 3_000_000 + "</w:document>"})
    with pytest.raises(SourceError) as refused:
        read(bomb, WORD)
    assert refused.value.code == "archive_bomb"
    # an entity is never expanded, so its words are not read (nor fetched: no DTD, no network)
    small = '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "guaranteed returns">]>'
    small += f"<w:document {W}><w:body>{paragraph('Hello &a; there')}</w:body></w:document>"
    assert read(office({"word/document.xml": small}), WORD) == "Hello  there"
    # the billion laughs: libxml2 stops at its amplification limit, at once; the file is unreadable
    laughs = '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "lol lol lol lol lol lol lol lol lol lol">'
    for inner, outer in zip("abcdefgh", "bcdefghi", strict=True):
        laughs += f'<!ENTITY {outer} "{("&" + inner + ";") * 10}">'
    laughs += f"]><w:document {W}><w:body>{paragraph('Hello &i; there')}</w:body></w:document>"
    started = time.monotonic()
    with pytest.raises(UnreadableDocument, match="amplification"):
        read(office({"word/document.xml": laughs}), WORD)
    assert time.monotonic() - started < 2


# --- in a mail -----------------------------------------------------------------------------------


def test_a_claim_in_a_pdf_or_word_attachment_is_read_as_part_of_the_message():
    raw = mail(
        "Hi Ann,\n\nThe documents are attached.\n\nBob",
        attachments=(
            AttachmentSpec("terms.pdf", "application/pdf", pdf_document([["Capital is 100% protected."]])),
            AttachmentSpec("letter.docx", "application/octet-stream", docx(paragraph("Doubles by March."))),
        ),
    ).as_bytes()

    message = parse_email(raw)

    by_name = {a["name"]: a for a in message.attachments}
    assert message.body[by_name["terms.pdf"]["start"] : by_name["terms.pdf"]["end"]].endswith(
        "Capital is 100% protected."
    )
    assert message.body.endswith("Doubles by March.")
    assert by_name["letter.docx"]["scored"] is True and "unreadable" not in by_name["letter.docx"]


def test_a_protected_pdf_is_listed_unreadable_a_scanned_one_not_scored_and_the_rest_read():
    raw = mail(
        "Hi Ann,\n\nThe password follows by text.\n\nBob",
        attachments=(
            AttachmentSpec("offer.pdf", "application/pdf", encrypted(pdf_document([["Zero risk."]]), "pw")),
            AttachmentSpec("scan.pdf", "application/pdf", pdf_document([[]])),
        ),
    ).as_bytes()

    message = parse_email(raw)

    offer, scan = message.attachments
    assert (offer["scored"], offer["unreadable"]) == (False, True)
    assert offer["note"] == "not scored: password-protected: its text cannot be read without the password"
    assert (scan["scored"], "unreadable" in scan) == (False, False)
    assert scan["note"] == "not scored: the PDF has no text (scanned pages or images only)"
    assert message.body == "Hi Ann,\n\nThe password follows by text.\n\nBob"


def test_the_document_limits_come_from_the_mail_limits():
    pages = pdf_document([["one"], ["two"]])
    raw = mail("Hi.", attachments=(AttachmentSpec("a.pdf", "application/pdf", pages),)).as_bytes()

    (listed,) = parse_email(raw, limits=MailLimits(max_document_pages=1)).attachments

    assert listed["unreadable"] is True and "a PDF of 2 pages" in listed["note"]
