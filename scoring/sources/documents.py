"""The text of a document sent as an attachment: PDF, and Office Open XML (Word .docx, PowerPoint
.pptx, Excel .xlsx, their macro-enabled forms too, Transitional or Strict). Pure functions over
bytes, no Django.

- **PDF** is read with pypdfium2, the Python binding of PDFium, the PDF engine of Chrome (in C,
  fuzzed continuously by OSS-Fuzz, which finds crashes; it does not bound time or memory, so the
  pages are read against a time budget, checked between pages). Every page's text, in the order
  PDFium lays it out, then the words added on the page (annotations' contents: a typewriter or
  free-text box, a sticky note, a comment; a text field's value), pages apart by a blank line.
  One document at a time in a process (`_PDFIUM`): PDFium is not thread-safe.
- **Office Open XML** is a zip of XML parts, read with the standard library's `zipfile` and lxml
  (entities never expanded, no DTD, no network). Every XML part of the document's folder (word/,
  ppt/, xl/) is read, not only the parts a well-made file names (a decoy `document.xml` beside the
  real body must not hide it): the main parts first (a Word document's body, headers, footers,
  footnotes, endnotes and comments; a presentation's slides by number, then speaker notes; a
  workbook's shared strings, then sheets), then the rest by name (text boxes, SmartArt, charts'
  and drawings' text, slide masters and layouts, comments). Words are the text elements of
  WordprocessingML, DrawingML and SpreadsheetML; not read: deleted text of tracked changes,
  field codes, phonetic guides, the fallback copy of `mc:AlternateContent`, numbers and formulas.

Whatever goes wrong, the mail is not refused for it: `document_text` raises UnreadableDocument
(the reviewer sees why; the mail reader lists the part as text that could not be read, which sends
the message to review: a protected file sent to a client is where a claim would hide) for a
password-protected file (a PDF with a user password; an OLE compound file, which is how Office
encrypts, or a binary .doc/.xls/.ppt renamed), a broken file or one that is not what its type
says, a PDF of more pages than `max_pages` or read for longer than `max_seconds`, an Office file
past the zip limits or using XML entities, a document whose text is longer than `max_chars`, and
any other failure of the parsers on a hostile file. A PDF of scanned pages has no text layer: it
is read as having no text (`document_text` returns ""), like an image.
"""

from __future__ import annotations

import ctypes
import io
import re
import threading
import time
import zipfile
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_raw
from lxml import etree

PDF = "pdf"
WORD = "docx"
POWERPOINT = "pptx"
EXCEL = "xlsx"
LABELS = {PDF: "PDF", WORD: "Word document", POWERPOINT: "PowerPoint presentation", EXCEL: "Excel workbook"}
KIND_BY_TYPE = {
    "application/pdf": PDF,
    "application/x-pdf": PDF,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": WORD,
    "application/vnd.ms-word.document.macroenabled.12": WORD,
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": POWERPOINT,
    "application/vnd.ms-powerpoint.presentation.macroenabled.12": POWERPOINT,
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": EXCEL,
    "application/vnd.ms-excel.sheet.macroenabled.12": EXCEL,
}
# The type a document found by its name alone (inside a zip) is listed with.
TYPE_OF_KIND = {kind: content_type for content_type, kind in reversed(KIND_BY_TYPE.items())}
KIND_BY_SUFFIX = {
    ".pdf": PDF,
    ".docx": WORD,
    ".docm": WORD,
    ".pptx": POWERPOINT,
    ".pptm": POWERPOINT,
    ".xlsx": EXCEL,
    ".xlsm": EXCEL,
}
# The types mail clients give a file they do not know; such a file is known by its name.
GENERIC_TYPES = frozenset(
    {"application/octet-stream", "binary/octet-stream", "application/download", "application/x-download"}
)
# An encrypted Office file is an OLE compound file holding the encrypted package, not a zip.
OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
PROTECTED = "password-protected: its text cannot be read without the password"

_NAMESPACES = {
    "w": (
        "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
        "http://purl.oclc.org/ooxml/wordprocessingml/main",  # Strict Open XML
    ),
    "a": (
        "http://schemas.openxmlformats.org/drawingml/2006/main",
        "http://purl.oclc.org/ooxml/drawingml/main",
    ),
    "s": (
        "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
        "http://purl.oclc.org/ooxml/spreadsheetml/main",
    ),
    "p": (
        "http://schemas.openxmlformats.org/presentationml/2006/main",
        "http://purl.oclc.org/ooxml/presentationml/main",
    ),
    "mc": ("http://schemas.openxmlformats.org/markup-compatibility/2006",),
}


def _tags(prefix: str, *names: str) -> frozenset[str]:
    return frozenset(f"{{{ns}}}{name}" for ns in _NAMESPACES[prefix] for name in names)


TEXT = _tags("w", "t") | _tags("a", "t") | _tags("s", "t") | _tags("p", "text")  # p:text: a comment
LINE_BREAKS = _tags("w", "br", "cr") | _tags("a", "br")
TABS = _tags("w", "tab")
PARAGRAPHS = _tags("w", "p") | _tags("a", "p") | _tags("s", "si", "is")
# Not the document's words: a paragraph's tab stops, East Asian phonetic guides (the same words
# again), and the copy of an mc:AlternateContent for older readers (its mc:Choice is read).
SKIPPED = _tags("w", "tabs") | _tags("s", "rPh") | _tags("mc", "Fallback")


@dataclass(frozen=True)
class _Layout:
    """Where an Office format keeps its parts: the part every such file has, the folder whose XML
    parts are read, and the name beginnings of those read first, in that order."""

    main: str
    folder: str
    first: tuple[str, ...]


OFFICE = {
    WORD: _Layout(
        "word/document.xml",
        "word/",
        (
            "word/document.xml",
            "word/header",
            "word/footer",
            "word/footnotes",
            "word/endnotes",
            "word/comments",
        ),
    ),
    POWERPOINT: _Layout("ppt/presentation.xml", "ppt/", ("ppt/slides/", "ppt/notesSlides/")),
    EXCEL: _Layout("xl/workbook.xml", "xl/", ("xl/sharedStrings", "xl/worksheets/")),
}


@dataclass(frozen=True)
class DocumentLimits:
    """How much of a document is read (MailLimits.documents())."""

    max_pages: int = 500
    max_chars: int = 100_000  # the most a message's body holds (settings.MAX_BODY_CHARS)
    max_seconds: float = 20.0  # reading a PDF's pages, checked between pages
    max_archive_bytes: int = 20 * 1024 * 1024
    max_archive_ratio: int = 100
    max_archive_members: int = 1000


class UnreadableDocument(Exception):
    """The document's text could not be read; the message says why, for the reviewer."""


def document_kind(content_type: str, name: str) -> str | None:
    """PDF, WORD, POWERPOINT or EXCEL for a part of that type, or of a generic type with such a
    file name; None for anything else."""
    kind = KIND_BY_TYPE.get(content_type.lower())
    if kind is None and content_type.lower() in GENERIC_TYPES:
        suffix = name.lower().rpartition(".")[2]
        kind = KIND_BY_SUFFIX.get(f".{suffix}")
    return kind


def document_text(data: bytes, kind: str, *, limits: DocumentLimits) -> str:
    """The words of the document (`kind` from document_kind); "" when it has none (a scanned
    PDF). Raises UnreadableDocument, never anything else, when its text cannot be read (the
    module docstring says when)."""
    try:
        text = _pdf_text(data, limits) if kind == PDF else _office_text(data, kind, limits=limits)
    except UnreadableDocument:
        raise
    except Exception as exc:  # a parser's failure on a hostile file (zlib.error, RecursionError...)
        raise UnreadableDocument(f"not a readable {LABELS[kind]} ({type(exc).__name__}: {exc})") from None
    return text.strip()


# --- PDF ---------------------------------------------------------------------------------------

_PDFIUM = threading.Lock()


def _pdf_text(data: bytes, limits: DocumentLimits) -> str:
    with _PDFIUM:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == pdfium_raw.FPDF_ERR_PASSWORD:
                raise UnreadableDocument(PROTECTED) from None
            raise UnreadableDocument(f"not a readable PDF ({exc})") from None
        try:
            return _pages_text(pdf, limits)
        finally:
            pdf.close()


def _pages_text(pdf, limits: DocumentLimits) -> str:
    pages = len(pdf)
    if pages > limits.max_pages:
        raise UnreadableDocument(f"a PDF of {pages:,} pages; no more than {limits.max_pages:,} are read")
    texts, length, started = [], 0, time.monotonic()
    for index in range(pages):
        if time.monotonic() - started >= limits.max_seconds:
            raise UnreadableDocument(
                f"reading the PDF took longer than {limits.max_seconds:g} s (page {index + 1} of {pages:,})"
            )
        try:
            page = pdf[index]
            try:
                textpage = page.get_textpage()
                try:
                    text = textpage.get_text_range()
                finally:
                    textpage.close()
                notes = _annotations_text(page, started, limits)
            finally:
                page.close()
        except pdfium.PdfiumError as exc:
            raise UnreadableDocument(f"page {index + 1} of the PDF cannot be read ({exc})") from None
        length += len(text)
        if length > limits.max_chars:
            raise UnreadableDocument(_too_long(limits))
        length += sum(len(n) for n in notes)
        if length > limits.max_chars:
            raise UnreadableDocument(_too_long(limits))
        texts.append("\n".join([text.replace("\r\n", "\n").strip(), *notes]).strip())
    return "\n\n".join(t for t in texts if t)


# Annotations whose words are not their own: a link, and the pop-up that shows its parent's words.
_NO_WORDS = frozenset({pdfium_raw.FPDF_ANNOT_LINK, pdfium_raw.FPDF_ANNOT_POPUP})


def _annotations_text(page, started: float, limits: DocumentLimits) -> list[str]:
    """The words added on the page rather than in it: each annotation's contents (a typewriter or
    free-text box, a sticky note, a comment on a highlight) and a form field's value, which the
    page's text does not hold."""
    out = []
    for index in range(pdfium_raw.FPDFPage_GetAnnotCount(page.raw)):
        if time.monotonic() - started >= limits.max_seconds:
            raise UnreadableDocument(
                f"reading the PDF's annotations took longer than {limits.max_seconds:g} s"
            )
        annotation = pdfium_raw.FPDFPage_GetAnnot(page.raw, index)
        if not annotation:
            continue
        try:
            if pdfium_raw.FPDFAnnot_GetSubtype(annotation) in _NO_WORDS:
                continue
            for key in (b"Contents", b"V"):
                # a text field's value is a string; a check box's (Off, Yes) is a name: not words
                string = pdfium_raw.FPDFAnnot_GetValueType(annotation, key) == pdfium_raw.FPDF_OBJECT_STRING
                words = _annotation_string(annotation, key).strip() if string else ""
                if words:
                    out.append(words)
        finally:
            pdfium_raw.FPDFPage_CloseAnnot(annotation)
    return out


def _annotation_string(annotation, key: bytes) -> str:
    if not pdfium_raw.FPDFAnnot_HasKey(annotation, key):
        return ""
    size = pdfium_raw.FPDFAnnot_GetStringValue(annotation, key, None, 0)  # bytes, UTF-16LE with its NUL
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    pdfium_raw.FPDFAnnot_GetStringValue(
        annotation, key, ctypes.cast(buffer, ctypes.POINTER(pdfium_raw.FPDF_WCHAR)), size
    )
    return buffer.raw[: size - 2].decode("utf-16-le", errors="replace")


def pdf_document(pages: list[list[str]]) -> bytes:
    """A PDF of these pages, each a list of lines in Helvetica (made with PDFium): the demo's and
    the import benchmark's factsheets, and the tests' documents."""
    with _PDFIUM:
        pdf = pdfium.PdfDocument.new()
        try:
            font = pdfium_raw.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica")
            for lines in pages:
                page = pdf.new_page(595, 842)
                for row, line in enumerate(lines):
                    text = pdfium_raw.FPDFPageObj_CreateTextObj(pdf.raw, font, 11.0)
                    wide = ctypes.create_string_buffer((line + "\0").encode("utf-16-le"))
                    wide_p = ctypes.cast(wide, ctypes.POINTER(pdfium_raw.FPDF_WCHAR))
                    pdfium_raw.FPDFText_SetText(text, wide_p)
                    pdfium_raw.FPDFPageObj_Transform(text, 1, 0, 0, 1, 56, 780 - 16 * row)
                    pdfium_raw.FPDFPage_InsertObject(page.raw, text)
                pdfium_raw.FPDFPage_GenerateContent(page.raw)
                page.close()
            buffer = io.BytesIO()
            pdf.save(buffer)
            pdfium_raw.FPDFFont_Close(font)
        finally:
            pdf.close()
    return buffer.getvalue()


# --- Office Open XML ---------------------------------------------------------------------------


def _office_text(data: bytes, kind: str, *, limits: DocumentLimits) -> str:
    label = LABELS[kind]
    if data.startswith(OLE_SIGNATURE):
        raise UnreadableDocument(
            f"{PROTECTED}, or not an Office Open XML file at all (an OLE compound file: how Office "
            f"encrypts a {label}, and the binary format of .doc, .xls and .ppt files)"
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnreadableDocument(f"not a readable {label} ({exc})") from None
    layout = OFFICE[kind]
    names = {m.filename for m in members}
    main = _main_part(archive, names) or layout.main
    if main not in names:
        raise UnreadableDocument(f"not a readable {label}: it has no {main}")
    # Every XML part but the package's own (relationships, properties, custom data) and, unless it
    # is the main part, the glossary (building blocks and placeholder text nobody was sent).
    wanted = [
        m
        for m in members
        if m.filename == main
        or (m.filename.lower().endswith(".xml") and not m.filename.lower().startswith(_NOT_WORDS))
    ]
    wanted.sort(key=lambda m: _part_order(m.filename, layout, main))
    _check_expansion(wanted, len(data), limits, label)
    budget, texts, length, started = limits.max_archive_bytes, [], 0, time.monotonic()
    for member in wanted:
        if time.monotonic() - started >= limits.max_seconds:
            raise UnreadableDocument(f"reading the {label} took more than {limits.max_seconds:g} s")
        if member.flag_bits & 0x1:
            raise UnreadableDocument(PROTECTED)
        with archive.open(member) as handle:
            content = handle.read(budget + 1)  # no more than the budget, whatever the header says
        budget -= len(content)
        if budget < 0:
            raise UnreadableDocument(
                f"its XML expands past {human_size(limits.max_archive_bytes)}, more than its directory "
                "declares (a zip bomb?): not read"
            )
        text = _xml_text(content, where=f"{member.filename!r} of the {label}")
        length += len(text)
        if length > limits.max_chars:
            raise UnreadableDocument(_too_long(limits))
        texts.append(text.strip())
    return "\n\n".join(t for t in texts if t)


# Parts that hold no words of the document: the package's relationships, content types and
# properties, custom XML data, and the glossary's building blocks (read if the main part is there).
_NOT_WORDS = ("_rels/", "[content_types].xml", "docprops/", "customxml/", "word/glossary/")
_OFFICE_DOCUMENT = "/officeDocument"


def _main_part(archive: zipfile.ZipFile, names: set[str]) -> str | None:
    """The part the package's relationships name as the document (`_rels/.rels`), which an Office
    application opens whatever its name; None when they name none."""
    if "_rels/.rels" not in names:
        return None
    with archive.open("_rels/.rels") as handle:
        content = handle.read(1024 * 1024)
    try:
        root = etree.fromstring(content, _PARSER)
    except (etree.XMLSyntaxError, ValueError):
        return None
    for relationship in root:
        if isinstance(relationship.tag, str) and str(relationship.get("Type", "")).endswith(_OFFICE_DOCUMENT):
            return str(relationship.get("Target", "")).lstrip("/")
    return None


def _check_expansion(parts: list[zipfile.ZipInfo], size: int, limits: DocumentLimits, label: str) -> None:
    """An Office file's XML parts past the zip limits are not read (the mail is not refused for
    them: a large workbook is not a bomb, and a bomb is only a file nobody reads)."""
    if len(parts) > limits.max_archive_members:
        raise UnreadableDocument(
            f"the {label} holds {len(parts):,} XML parts; no more than "
            f"{limits.max_archive_members:,} are read"
        )
    declared = sum(m.file_size for m in parts)
    ratio = declared / max(1, size)
    if declared > limits.max_archive_bytes or ratio > limits.max_archive_ratio:
        raise UnreadableDocument(
            f"its XML would expand to {human_size(declared)} (ratio {ratio:,.0f}:1), past the limits of "
            f"{human_size(limits.max_archive_bytes)} and {limits.max_archive_ratio}:1: not read"
        )


_PARSER = etree.XMLParser(
    resolve_entities=False,
    no_network=True,
    load_dtd=False,
    huge_tree=False,
    remove_comments=True,
    remove_pis=True,
)


def _xml_text(content: bytes, *, where: str) -> str:
    try:
        root = etree.fromstring(content, _PARSER)
    except (etree.XMLSyntaxError, ValueError) as exc:
        raise UnreadableDocument(f"{where} is not readable XML ({exc})") from None
    out: list[str] = []
    skipping = 0
    for event, element in etree.iterwalk(root, events=("start", "end")):
        tag = element.tag
        if not isinstance(tag, str):
            if isinstance(element, etree._Entity):  # its text would need the DTD: never expanded
                raise UnreadableDocument(
                    f"{where} uses an XML entity ({element.text}), which is not expanded"
                )
            continue
        if tag in SKIPPED:
            skipping += 1 if event == "start" else -1
            continue
        if skipping:
            continue
        if event == "start":  # a paragraph inside another one (a text box) starts a line
            if tag in PARAGRAPHS and out and not out[-1].endswith("\n"):
                out.append("\n")
            continue
        if tag in TEXT:
            out.append(element.text or "")
        elif tag in LINE_BREAKS:
            out.append("\n")
        elif tag in TABS:
            out.append("\t")
        elif tag in PARAGRAPHS:
            out.append("\n")
    return "".join(out)


def _part_order(filename: str, layout: _Layout, main: str) -> tuple:
    """The main part first, then the layout's parts in its order, then the rest by name; numbers
    in names in order (slide2 before slide10)."""
    first = next((i for i, p in enumerate(layout.first) if filename.startswith(p)), len(layout.first))
    return (filename != main, first, [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", filename)])


def _too_long(limits: DocumentLimits) -> str:
    return f"its text is longer than {limits.max_chars:,} characters, the most that is read"


def human_size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"
