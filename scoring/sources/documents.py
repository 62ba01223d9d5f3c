"""The text of a document sent as an attachment: PDF, and Office Open XML (Word .docx, PowerPoint
.pptx, Excel .xlsx, their macro-enabled forms too). Pure functions over bytes, no Django.

- **PDF** is read with pypdfium2, the Python binding of PDFium, the PDF engine of Chrome (in C,
  fuzzed continuously by Google's OSS-Fuzz: hostile files are its daily input). Every page's
  text, in the order PDFium lays it out, pages apart by a blank line. One document at a time in
  a process (`_PDFIUM`): PDFium is not thread-safe.
- **Office Open XML** is a zip of XML parts, read with the standard library's `zipfile` under the
  same limits as a zip attachment (`check_archive`) and lxml with entities left unexpanded and no
  DTD or network: the words of a Word document's body, headers, footers, footnotes, endnotes and
  comments (deleted text of tracked changes and field codes left out), of a presentation's slides
  and speaker notes, and of a workbook's text cells (shared and inline strings; numbers and
  formulas are not words).

What is not read, and why (`UnreadableDocument`, whose message the reviewer sees; the mail reader
lists the part as text that could not be read, which sends the message to review: a protected
file sent to a client is where a claim would hide): a password-protected file (a PDF with a user
password; an encrypted Office file, which is an OLE compound file, not a zip), a file that is not
what its type says or is broken, a PDF of more pages than `max_pages`, and a document whose text
is longer than `max_chars`. A PDF of scanned pages has no text layer: it is read as having no
text (`document_text` returns ""), like an image.
"""

from __future__ import annotations

import ctypes
import io
import re
import threading
import zipfile
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_raw
from lxml import etree

from scoring.sources.errors import SourceError

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

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


@dataclass(frozen=True)
class _Layout:
    """Where an Office format keeps its words: the parts read (the first one must be there), and
    in each part the elements that hold text, that break a line, and that end a paragraph."""

    main: str
    parts: re.Pattern
    order: tuple[str, ...]  # the parts read, in this order of their names' beginnings
    text: frozenset
    breaks: frozenset
    paragraphs: frozenset
    skipped: frozenset = frozenset()  # elements whose text is not the document's words


OFFICE = {
    WORD: _Layout(
        "word/document.xml",
        re.compile(r"word/(document|header\d*|footer\d*|footnotes|endnotes|comments)\.xml"),
        ("word/document", "word/header", "word/footer", "word/footnotes", "word/endnotes", "word/comments"),
        frozenset({f"{_W}t"}),
        frozenset({f"{_W}br", f"{_W}cr", f"{_W}tab"}),
        frozenset({f"{_W}p"}),
    ),
    POWERPOINT: _Layout(
        "ppt/presentation.xml",
        re.compile(r"ppt/(slides/slide\d+|notesSlides/notesSlide\d+)\.xml"),
        ("ppt/slides/", "ppt/notesSlides/"),
        frozenset({f"{_A}t"}),
        frozenset({f"{_A}br"}),
        frozenset({f"{_A}p"}),
    ),
    EXCEL: _Layout(
        "xl/workbook.xml",
        re.compile(r"xl/(sharedStrings|worksheets/sheet\d+)\.xml"),
        ("xl/sharedStrings", "xl/worksheets/"),
        frozenset({f"{_S}t"}),
        frozenset(),
        frozenset({f"{_S}si", f"{_S}is"}),
        frozenset({f"{_S}rPh"}),  # phonetic guides of East Asian text: the same words again
    ),
}


@dataclass(frozen=True)
class DocumentLimits:
    """How much of a document is read (MailLimits.documents())."""

    max_pages: int = 500
    max_chars: int = 2_000_000
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


def document_text(data: bytes, kind: str, *, name: str, limits: DocumentLimits) -> str:
    """The words of the document (`kind` from document_kind); "" when it has none (a scanned
    PDF). Raises UnreadableDocument when its text cannot be read, SourceError('archive_bomb') for
    an Office file that would expand past the archive limits."""
    text = _pdf_text(data, limits) if kind == PDF else _office_text(data, kind, name=name, limits=limits)
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
    texts, length = [], 0
    for index in range(pages):
        try:
            page = pdf[index]
            try:
                textpage = page.get_textpage()
                try:
                    text = textpage.get_text_range()
                finally:
                    textpage.close()
            finally:
                page.close()
        except pdfium.PdfiumError as exc:
            raise UnreadableDocument(f"page {index + 1} of the PDF cannot be read ({exc})") from None
        length += len(text)
        if length > limits.max_chars:
            raise UnreadableDocument(_too_long(limits))
        texts.append(text.replace("\r\n", "\n").strip())
    return "\n\n".join(t for t in texts if t)


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
        finally:
            pdf.close()
    return buffer.getvalue()


# --- Office Open XML ---------------------------------------------------------------------------


def check_archive(what: str, members: list[zipfile.ZipInfo], size: int, limits: DocumentLimits) -> None:
    """Refuse (SourceError 'archive_bomb') a zip of more members than the limit, or that says it
    expands past the byte limit or the ratio limit; `what` names it ("the zip attachment 'a.zip'")."""
    if len(members) > limits.max_archive_members:
        raise SourceError(
            "archive_bomb",
            f"{what} holds {len(members):,} files; the limit is {limits.max_archive_members:,}.",
        )
    declared = sum(m.file_size for m in members)
    ratio = declared / max(1, size)
    if declared > limits.max_archive_bytes or ratio > limits.max_archive_ratio:
        raise SourceError(
            "archive_bomb",
            f"{what} ({human_size(size)}) would expand to {human_size(declared)} (ratio {ratio:,.0f}:1); "
            f"the limits are {human_size(limits.max_archive_bytes)} and {limits.max_archive_ratio}:1. "
            "Refused as a zip bomb.",
        )


def _office_text(data: bytes, kind: str, *, name: str, limits: DocumentLimits) -> str:
    label = LABELS[kind]
    if data.startswith(OLE_SIGNATURE):
        raise UnreadableDocument(f"{PROTECTED} (an encrypted {label})")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnreadableDocument(f"not a readable {label} ({exc})") from None
    what = f"the {label} {name!r}"
    check_archive(what, members, len(data), limits)
    layout = OFFICE[kind]
    names = {m.filename for m in members}
    if layout.main not in names:
        raise UnreadableDocument(f"not a readable {label}: it has no {layout.main}")
    wanted = [m for m in members if layout.parts.fullmatch(m.filename)]
    wanted.sort(key=lambda m: _part_order(m.filename, layout))
    budget, texts, length = limits.max_archive_bytes, [], 0
    for member in wanted:
        if member.flag_bits & 0x1:
            raise UnreadableDocument(PROTECTED)
        try:
            with archive.open(member) as handle:
                content = handle.read(budget + 1)  # no more than the budget, whatever the header says
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError) as exc:
            raise UnreadableDocument(f"{member.filename} of the {label} cannot be read ({exc})") from None
        budget -= len(content)
        if budget < 0:
            raise SourceError(
                "archive_bomb",
                f"{what} expands past {human_size(limits.max_archive_bytes)}, more than its directory "
                "declares. Refused as a zip bomb.",
            )
        text = _xml_text(content, layout, where=f"{member.filename} of the {label}")
        length += len(text)
        if length > limits.max_chars:
            raise UnreadableDocument(_too_long(limits))
        texts.append(text.strip())
    return "\n\n".join(t for t in texts if t)


_PARSER = etree.XMLParser(
    resolve_entities=False,
    no_network=True,
    load_dtd=False,
    huge_tree=False,
    remove_comments=True,
    remove_pis=True,
)


def _xml_text(content: bytes, layout: _Layout, *, where: str) -> str:
    try:
        root = etree.fromstring(content, _PARSER)
    except (etree.XMLSyntaxError, ValueError) as exc:
        raise UnreadableDocument(f"{where} is not readable XML ({exc})") from None
    out: list[str] = []
    skipping = 0
    for event, element in etree.iterwalk(root, events=("start", "end")):
        tag = element.tag
        if not isinstance(tag, str):  # an entity reference, left unexpanded
            continue
        if tag in layout.skipped:
            skipping += 1 if event == "start" else -1
            continue
        if event != "end" or skipping:
            continue
        if tag in layout.text:  # its text, and the text after any entity reference in it
            out.append((element.text or "") + "".join(child.tail or "" for child in element))
        elif tag in layout.breaks:
            out.append("\t" if tag.endswith("}tab") else "\n")
        elif tag in layout.paragraphs:
            out.append("\n")
    return "".join(out)


def _part_order(filename: str, layout: _Layout) -> tuple:
    """The parts in the layout's order, each kind by name with its numbers in order (slide2 before
    slide10)."""
    first = next(i for i, prefix in enumerate(layout.order) if filename.startswith(prefix))
    return (first, [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", filename)])


def _too_long(limits: DocumentLimits) -> str:
    return f"its text is longer than {limits.max_chars:,} characters, the most that is read"


def human_size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"
