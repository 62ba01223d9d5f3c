"""PDF and Office attachments (scoring.sources.documents): their words are read as the message's,
and a document whose text cannot be read is listed as such (it sends the message to review)."""

from __future__ import annotations

import io
import time
import zipfile

import pypdf
import pytest
from pypdf.annotations import FreeText, Link, Text

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
    return document_text(data, kind, limits=DocumentLimits(**limits))


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
    assert read(data, PDF, max_chars=20) == "one\n\ntwo\n\nthree"
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
        "ppt/slideLayouts/slideLayout1.xml": slide.format(a=A, text="Shown on every slide"),
    }

    text = read(office(parts), POWERPOINT)

    # (the layout's words show on every slide using it: read too, after the slides and notes)
    assert (
        text
        == "Slide two: it will double by March\n\nSlide ten\n\nSay: no risk at all\n\nShown on every slide"
    )


def test_a_workbook_s_text_cells_are_read_not_its_numbers():
    shared = f"<sst {S}><si><t>Fund</t></si>"
    shared += "<si><r><t>Guaranteed </t></r><r><t>5%</t></r><rPh><t>x</t></rPh></si></sst>"
    sheet = f'<worksheet {S}><sheetData><row><c t="s"><v>0</v></c><c><v>1234.5</v></c>'
    sheet += '<c t="inlineStr"><is><t>Risk-free</t></is></c></row></sheetData></worksheet>'
    parts = {"xl/workbook.xml": "<w/>", "xl/sharedStrings.xml": shared, "xl/worksheets/sheet1.xml": sheet}

    assert read(office(parts), EXCEL) == "Fund\nGuaranteed 5%\n\nRisk-free"


def test_an_office_file_that_is_encrypted_broken_or_not_what_it_says_is_unreadable():
    with pytest.raises(
        UnreadableDocument, match=r"password-protected: .*how Office encrypts a Word document"
    ):
        read(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), WORD)
    with pytest.raises(UnreadableDocument, match="not a readable Word document"):
        read(b"PK\x03\x04 not a zip", WORD)
    with pytest.raises(UnreadableDocument, match=r"it has no word/document\.xml"):
        read(office({"xl/workbook.xml": "<w/>"}), WORD)
    with pytest.raises(UnreadableDocument, match=r"document\.xml' of the Word document is not readable XML"):
        read(office({"word/document.xml": "<w:document"}), WORD)


def test_an_office_file_past_the_zip_limits_is_unreadable_not_a_refused_mail():
    # a zip bomb by another name, or a large workbook: its XML is not read, the mail is kept
    bomb = office({"word/document.xml": f"<w:document {W}>" + " " * 3_000_000 + "</w:document>"})
    with pytest.raises(UnreadableDocument, match=r"would expand to 2\.9 MB \(ratio"):
        read(bomb, WORD)
    many = office(
        {"word/document.xml": f"<w:document {W}/>", **{f"word/part{i}.xml": "<x/>" for i in range(5)}}
    )
    with pytest.raises(UnreadableDocument, match="holds 6 XML parts; no more than 5 are read"):
        read(many, WORD, max_archive_members=5)
    long = docx(paragraph("x" * 50) * 3)
    assert len(read(long, WORD, max_chars=200)) == 152
    with pytest.raises(UnreadableDocument, match="longer than 100 characters"):
        read(long, WORD, max_chars=100)


def test_an_office_file_that_breaks_its_parser_is_unreadable_never_an_error():
    # deflate data that is not deflate: zlib.error inside zipfile, not one of zipfile's own errors
    data = bytearray(docx(paragraph("Zero risk.") * 20))
    data[data.find(b"word/document.xml") + len("word/document.xml")] = 0xFF  # its local header's name
    with pytest.raises(UnreadableDocument, match="not a readable Word document"):
        read(bytes(data), WORD)
    # a member that says it is encrypted
    locked = bytearray(docx(paragraph("Zero risk.")))
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = locked.find(signature)
        while at != -1:
            locked[at + flags_at] |= 0x1
            at = locked.find(signature, at + 4)
    with pytest.raises(UnreadableDocument, match="password-protected"):
        read(bytes(locked), WORD)


def test_every_xml_part_of_the_document_is_read_so_a_decoy_main_part_hides_nothing():
    # the body a well-made file's relationships name may be any part: a decoy word/document.xml
    # beside the real one, SmartArt, a chart's text are read too, after the main parts
    smartart = f'<dgm:dataModel xmlns:dgm="d" {A}><a:p><a:r><a:t>Capital guaranteed</a:t></a:r></a:p>'
    smartart += "</dgm:dataModel>"
    document = f"<w:document {W}><w:body>{{}}</w:body></w:document>"
    parts = {
        "word/document.xml": document.format(paragraph("Hello.")),
        "word/document2.xml": document.format(paragraph("Returns of 20% are certain.")),
        "word/diagrams/data1.xml": smartart,
        "word/styles.xml": f"<w:styles {W}/>",
    }

    assert read(office(parts), WORD) == "Hello.\n\nCapital guaranteed\n\nReturns of 20% are certain."


def test_strict_open_xml_and_alternate_content_are_read_once_and_tab_stops_are_not_tabs():
    strict = 'xmlns:w="http://purl.oclc.org/ooxml/wordprocessingml/main"'
    mc = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
    body = (
        "<w:p><w:pPr><w:tabs><w:tab/><w:tab/></w:tabs></w:pPr><w:r><w:t>Zero</w:t><w:tab/><w:t>risk</w:t></w:r>"
        "<mc:AlternateContent><mc:Choice><w:txbxContent>"
        + paragraph("In the box")
        + "</w:txbxContent></mc:Choice><mc:Fallback><w:txbxContent>"
        + paragraph("In the box")
        + "</w:txbxContent></mc:Fallback></mc:AlternateContent></w:p>"
    )
    document = f"<w:document {strict} {mc}><w:body>{body}</w:body></w:document>"

    assert read(office({"word/document.xml": document}), WORD) == "Zero\trisk\nIn the box"


def test_an_office_part_using_an_entity_is_unreadable_and_the_billion_laughs_costs_nothing():
    # an entity is never expanded; its words would be lost, so the part is not read at all
    small = '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "guaranteed returns">]>'
    small += f"<w:document {W}><w:body>{paragraph('Hello &a; there')}</w:body></w:document>"
    with pytest.raises(UnreadableDocument, match=r"uses an XML entity \(&a;\)"):
        read(office({"word/document.xml": small}), WORD)
    laughs = '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "lol lol lol lol lol lol lol lol lol lol">'
    for inner, outer in zip("abcdefgh", "bcdefghi", strict=True):
        laughs += f'<!ENTITY {outer} "{("&" + inner + ";") * 10}">'
    laughs += f"]><w:document {W}><w:body>{paragraph('Hello &i; there')}</w:body></w:document>"
    started = time.monotonic()
    with pytest.raises(UnreadableDocument):
        read(office({"word/document.xml": laughs}), WORD)
    assert time.monotonic() - started < 2


def test_a_pdf_read_past_its_time_budget_is_unreadable():
    data = pdf_document([["one"], ["two"]])

    with pytest.raises(UnreadableDocument, match=r"took longer than 0 s \(page 1 of 2\)"):
        read(data, PDF, max_seconds=0)


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
    assert scan["note"] == "not scored: the PDF has no text layer (scanned pages or images only)"
    assert message.body == "Hi Ann,\n\nThe password follows by text.\n\nBob"


def test_the_document_limits_come_from_the_mail_limits():
    pages = pdf_document([["one"], ["two"]])
    raw = mail("Hi.", attachments=(AttachmentSpec("a.pdf", "application/pdf", pages),)).as_bytes()

    (listed,) = parse_email(raw, limits=MailLimits(max_document_pages=1)).attachments

    assert listed["unreadable"] is True and "a PDF of 2 pages" in listed["note"]


def test_an_attachment_whose_text_would_take_the_body_past_its_limit_is_not_read_and_the_mail_kept():
    # given: a short mail with a factsheet, a long price list and a note, under a body limit of 2,000
    factsheet = pdf_document([[f"Line {i}: the fund invests in bonds and equities." for i in range(15)]])
    prices = "".join(f"fund {i},{i}.5%\n" for i in range(120)).encode()
    raw = mail(
        "Hi Ann,\n\nThe factsheet, prices and a note.\n\nBob",
        attachments=(
            AttachmentSpec("factsheet.pdf", "application/pdf", factsheet),
            AttachmentSpec("prices.csv", "text/csv", prices),
            AttachmentSpec("note.txt", "text/plain", b"Zero risk."),
        ),
    ).as_bytes()

    # when
    message = parse_email(raw, limits=MailLimits(max_body_chars=2_000))

    # then: the longest part is listed as not read (it sends the message to review), the rest kept
    factsheet, prices, note = message.attachments
    assert prices["unreadable"] is True and prices["scored"] is False
    assert "would make the message longer than 2,000 characters, the most a message holds" in prices["note"]
    assert factsheet["scored"] is True and note["scored"] is True
    assert message.body.endswith("Zero risk.") and len(message.body) <= 2_000


def test_a_pdf_or_word_file_inside_a_zip_is_read_as_one_attached_alone_is():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pack/terms.pdf", pdf_document([["Capital is 100% protected."]]))
        archive.writestr("pack/letter.docx", docx(paragraph("Doubles by March.")))
        archive.writestr("pack/logo.png", b"\x89PNG")
    raw = mail(
        "See the pack.", attachments=(AttachmentSpec("pack.zip", "application/zip", buffer.getvalue()),)
    )

    listed = {a["name"]: a for a in parse_email(raw.as_bytes()).attachments}

    assert listed["pack.zip/pack/terms.pdf"]["scored"] is True
    assert listed["pack.zip/pack/terms.pdf"]["content_type"] == "application/pdf"
    assert listed["pack.zip/pack/letter.docx"]["scored"] is True
    assert listed["pack.zip/pack/logo.png"]["scored"] is False


def test_the_mail_limits_in_force_take_the_body_limit_and_the_page_limit_from_settings(settings):
    from scoring.services.sources import mail_limits

    settings.MAX_BODY_CHARS, settings.EMAIL_MAX_DOCUMENT_PAGES = 1_234, 7

    limits = mail_limits().documents()

    assert (limits.max_chars, limits.max_pages) == (1_234, 7)


def test_words_added_on_a_pdf_page_are_read_after_its_text_and_a_link_is_not():
    # given: a page with a typewriter box, a sticky note and a link added (pypdf writes them)
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf_document([["Terms of the fund"]]))))
    writer.add_annotation(0, FreeText(text="Guaranteed 10% a year", rect=(50, 550, 200, 650)))
    writer.add_annotation(0, Text(text="Sticky: zero risk", rect=(50, 450, 200, 550)))
    writer.add_annotation(0, Link(rect=(50, 350, 200, 450), url="https://bank.example"))
    buffer = io.BytesIO()
    writer.write(buffer)

    # then: the page's text, then each annotation's words, in the page's order
    assert read(buffer.getvalue(), PDF) == "Terms of the fund\nGuaranteed 10% a year\nSticky: zero risk"


def test_the_part_the_package_names_as_the_document_is_read_wherever_it_is_and_the_glossary_is_not():
    # given: a decoy word/document.xml, the body the relationships name at /x/body.xml, and a
    # glossary of building blocks nobody was sent
    rels = '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    rels += '<Relationship Id="r1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    rels += 'officeDocument" Target="/x/body.xml"/></Relationships>'
    document = f"<w:document {W}><w:body>{{}}</w:body></w:document>"
    parts = {
        "_rels/.rels": rels,
        "word/document.xml": document.format(paragraph("Hello.")),
        "x/body.xml": document.format(paragraph("Returns of 20% are certain.")),
        "word/glossary/document.xml": document.format(paragraph("Type your guaranteed return here")),
        "docProps/core.xml": "<p xmlns:dc='d'><dc:title>Offer</dc:title></p>",
    }

    # then: the named part first, then the rest of the words; not the glossary
    assert read(office(parts), WORD) == "Returns of 20% are certain.\n\nHello."


def test_a_mac_s_resource_forks_and_office_s_lock_files_in_a_zip_are_not_read_as_documents():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pack/terms.pdf", pdf_document([["Terms."]]))
        archive.writestr("__MACOSX/pack/._terms.pdf", b"\x00\x05\x16\x07 AppleDouble")
        archive.writestr("pack/~$deck.pptx", b"lock")
    raw = mail(
        "See the pack.", attachments=(AttachmentSpec("pack.zip", "application/zip", buffer.getvalue()),)
    )

    listed = {a["name"]: a for a in parse_email(raw.as_bytes()).attachments}

    assert listed["pack.zip/pack/terms.pdf"]["scored"] is True
    assert not any(a.get("unreadable") for a in listed.values())


def test_a_thousand_small_attachments_over_the_body_limit_are_fitted_in_one_pass():
    # given: 1,000 text files in a zip, 100 characters each, under a body limit of 20,000
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i in range(1_000):
            archive.writestr(f"notes/{i:04}.txt", f"Note {i:04}: " + "x" * 89)
    raw = mail("Notes.", attachments=(AttachmentSpec("notes.zip", "application/zip", buffer.getvalue()),))

    started = time.monotonic()
    message = parse_email(raw.as_bytes(), limits=MailLimits(max_body_chars=20_000))
    seconds = time.monotonic() - started

    # then: as many as fit are read, the rest listed as not read, at once
    read_parts = [a for a in message.attachments if a["scored"]]
    not_read = [a for a in message.attachments if a.get("unreadable")]
    assert len(read_parts) + len(not_read) == 1_000 and 0 < len(read_parts) < 1_000
    assert len(message.body) <= 20_000
    assert all(message.body[a["start"] : a["end"]].startswith("[Attachment: notes.zip/") for a in read_parts)
    assert seconds < 5, seconds


def test_a_text_alone_over_the_body_limit_leaves_its_attachments_as_they_are():
    raw = mail("x" * 3_000, attachments=(AttachmentSpec("note.txt", "text/plain", b"Zero risk."),))

    message = parse_email(raw.as_bytes(), limits=MailLimits(max_body_chars=2_000))

    (note,) = message.attachments
    assert note["scored"] is True  # the message is refused at ingest (too_large), as any long body
