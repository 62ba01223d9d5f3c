"""Decoding the text of a MIME part: the declared charset, a wrong one, an unknown one.

What mail really carries, and what is done with it (each repair is reported as a note):
- no charset: RFC 2045 says US-ASCII; non-ASCII bytes are read as UTF-8 when they are valid
  UTF-8, else as Windows-1252 (what such mail almost always is);
- ISO-8859-1 / US-ASCII labels are read as Windows-1252, their superset, as browsers do (the
  WHATWG Encoding standard): Outlook labels its curly quotes and euro signs "iso-8859-1";
- a single-byte label (Latin-1, Windows-125x, ISO-8859-x, US-ASCII) on bytes that are valid
  non-ASCII UTF-8 is a wrong label: the text is read as UTF-8 (mis-decoding valid UTF-8 as a
  single-byte charset gives "Ã©" where "é" was meant, and valid UTF-8 by chance is vanishingly
  rare in real single-byte text);
- a label Python does not know: ASCII or valid UTF-8 bytes are read as such; anything else is
  refused (`unknown_charset`): guessing would show the reviewer text that was never sent;
- a label the bytes contradict (a strict decode fails, e.g. "utf-8" on Latin-1 bytes) is refused
  (`charset_mismatch`), naming the first bad byte and its offset.

"Refused" is this part's: the mail reader refuses the message when the part is its body, and
lists an attachment so refused as not scored, with the reason (scoring.sources.mail)."""

from __future__ import annotations

import codecs
from pathlib import Path

from scoring.sources.errors import SourceError

UTF8_CHECK_BLOCK = 1 << 20

# Labels read as Windows-1252 (WHATWG maps these labels to windows-1252).
_AS_WINDOWS_1252 = frozenset({"iso-8859-1", "latin-1", "latin1", "l1", "us-ascii", "ascii", "iso8859-1"})


def _is_single_byte(codec_name: str) -> bool:
    return codec_name.startswith(
        ("iso8859", "cp125", "latin", "windows-125", "ascii", "mac-")
    ) or codec_name in {"cp437", "cp850", "koi8-r", "koi8-u"}


def decode_text(data: bytes, declared: str | None, *, where: str) -> tuple[str, str]:
    """(text, note) of a text part's bytes under its declared charset (module docstring); the
    note is "" when nothing was repaired. Raises SourceError (unknown_charset,
    charset_mismatch); `where` names the part in the message."""
    ascii_only = data.isascii()
    if ascii_only:
        return data.decode("ascii"), ""
    label = (declared or "").strip().strip('"').lower()
    utf8 = _try(data, "utf-8")
    if not label:
        if utf8 is not None:
            return utf8, f"{where}: no charset declared; read as UTF-8"
        return data.decode("cp1252", errors="replace"), f"{where}: no charset declared; read as Windows-1252"
    try:
        codec = codecs.lookup(label).name
    except LookupError:
        if utf8 is not None:
            return utf8, f"{where}: unknown charset {label!r}; the bytes are UTF-8 and were read as such"
        raise SourceError(
            "unknown_charset",
            f"{where} declares the charset {label!r}, which this server does not know, and its bytes "
            "are not UTF-8: it cannot be read without guessing.",
        ) from None
    if codec != "utf-8" and _is_single_byte(codec) and utf8 is not None:
        return utf8, f"{where}: declared {label!r} but the bytes are UTF-8; read as UTF-8"
    if label in _AS_WINDOWS_1252 or codec in {"latin-1", "iso8859-1", "ascii"}:
        text = _try(data, "cp1252")
        if text is not None:
            return text, ""
        return data.decode("latin-1"), ""
    try:
        return data.decode(codec), ""
    except UnicodeDecodeError as exc:
        raise SourceError(
            "charset_mismatch",
            f"{where} declares the charset {label!r}, but byte 0x{data[exc.start]:02X} at offset "
            f"{exc.start} is not {label!r}: the declared charset does not match the text.",
        ) from None


def _try(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return None


def utf8_file_check(path: Path, *, block: int = UTF8_CHECK_BLOCK) -> None:
    """Raise SourceError(not_utf8), naming the line and byte offset of the first byte that is not
    UTF-8, if the file at `path` is not UTF-8 text throughout. Read in blocks (constant memory).

    Text transcripts (JSONL, CSV, chat) are stored in chunks as they are read; checking the whole
    file first means that a file that cannot be read to its end stores nothing, rather than the
    chunks before its bad byte."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    offset, newlines = 0, 0
    with path.open("rb") as handle:
        while True:
            data = handle.read(block)
            pending = len(decoder.getstate()[0])  # bytes of a sequence the last block cut
            try:
                decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                at = offset - pending + exc.start
                line = newlines + data[: max(at - offset, 0)].count(b"\n") + 1
                byte = (exc.object[exc.start : exc.start + 1] or b"?").hex()
                raise SourceError(
                    "not_utf8", f"the file is not UTF-8 text: byte 0x{byte} at offset {at:,} (line {line})"
                ) from None
            if not data:
                return
            offset += len(data)
            newlines += data.count(b"\n")
