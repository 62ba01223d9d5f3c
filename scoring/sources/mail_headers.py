"""The headers of a mail kept as text (scoring.sources.mail): From, To, Cc, Date, Message-ID and
the like, read by the standard library and, where it shows U+FFFD or escaped raw bytes, leniently
(_lenient_header); NUL characters removed (scoring.sources.mail, "NUL characters")."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email import errors as email_errors
from email.header import decode_header
from email.message import EmailMessage
from email.utils import getaddresses

_MSG_ID = re.compile(r"<([^<>\s]+)>")


def without_nul(text: str) -> str:
    """`text` without its NUL characters (scoring.sources.mail's docstring, "NUL characters")."""
    return text.replace("\x00", "")


_GARBLED = re.compile("[\ufffd\ud800-\udfff]")


def _garbled(value: str) -> bool:
    """The standard library's reading of an undecodable header: U+FFFD or escaped raw bytes."""
    return bool(_GARBLED.search(value))


def _raw_header(message: EmailMessage, name: str) -> str:
    return next((str(v) for k, v in message.raw_items() if k.lower() == name.lower()), "")


def _lenient_header(raw: str) -> str:
    """A header's text where the standard library shows U+FFFD: raw 8-bit bytes (no RFC 2047) or an
    encoded word whose bytes are not its label's, read as the body's text is (UTF-8, else
    Windows-1252) rather than shown as "M�ller"."""

    def text_of(data: bytes, charset: str | None) -> str:
        for codec in (charset, "utf-8", "cp1252"):
            try:
                return data.decode(codec) if codec else data.decode("ascii")
            except (LookupError, UnicodeDecodeError):
                continue
        return data.decode("latin-1")

    unfolded = re.sub(r"\r?\n[ \t]", " ", raw)
    try:
        chunks = decode_header(unfolded)
    except (ValueError, LookupError, email_errors.HeaderParseError):
        chunks = [(unfolded, None)]
    words = []
    for chunk, charset in chunks:
        if isinstance(chunk, bytes) and charset is None:
            # decode_header gives the text between encoded words as raw-unicode-escape bytes, in
            # which a raw byte is a surrogate spelled "\\udcfc": back to the byte it stands for.
            chunk = chunk.decode("raw-unicode-escape")
        data = chunk.encode("ascii", "surrogateescape") if isinstance(chunk, str) else chunk
        words.append(text_of(data, charset))
    return "".join(words)


def header_text(message: EmailMessage, name: str) -> str:
    try:
        value = str(message.get(name) or "")
    except (ValueError, IndexError, TypeError, AttributeError):  # a header too broken to parse
        return without_nul(_raw_header(message, name)).strip()
    if _garbled(value) and "\ufffd" not in _raw_header(message, name):
        value = _lenient_header(_raw_header(message, name))
    return without_nul(value).strip()


def addresses(message: EmailMessage, name: str) -> tuple[str, ...]:
    try:
        header = message.get(name)
        if header is None:
            return ()
        found = tuple(str(address) for group in header.groups for address in group.addresses)
        if not any(_garbled(address) for address in found):
            return tuple(without_nul(address) for address in found)
    except (ValueError, IndexError, TypeError, AttributeError):
        pass
    # The header read leniently, split as addresses are ("Müller, Hans" <h@x> is one).
    return tuple(_address_text(n, a) for n, a in getaddresses([header_text(message, name)]) if n or a)


def _address_text(name: str, address: str) -> str:
    if not name:
        return address
    shown = f'"{name}"' if re.search(r'[,;:"()<>@\[\]]', name) else name
    return f"{shown} <{address}>" if address else shown


def sender_address(message: EmailMessage) -> str:
    try:
        header = message.get("From")
        if header is not None and header.addresses:
            return without_nul(header.addresses[0].addr_spec or str(header.addresses[0]))
    except (ValueError, IndexError, TypeError, AttributeError):
        pass
    return header_text(message, "From")


def sent_date(message: EmailMessage) -> datetime | None:
    try:
        header = message.get("Date")
        value = getattr(header, "datetime", None)
    except (ValueError, IndexError, TypeError, AttributeError, OverflowError):
        return None
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def message_ids(value: str) -> tuple[str, ...]:
    found = tuple(_MSG_ID.findall(value))
    if found:
        return found
    bare = value.strip()
    return (bare,) if bare and " " not in bare else ()


def address_only(value: str) -> str:
    match = re.search(r"<([^<>]+)>", value)
    return (match.group(1) if match else value).strip().lower()
