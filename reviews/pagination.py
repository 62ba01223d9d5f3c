"""Keyset pagination cursors: an opaque, URL-safe token holding the sort key of the last row.

Pages are found with a WHERE on the sort key instead of OFFSET, so page 500 costs what page 1
costs and rows inserted meanwhile do not shift what the reviewer sees.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

PAGE_SIZE = 50


@dataclass
class Page:
    """One keyset page: its rows and the cursor of the next page (None on the last page)."""

    items: list[Any]
    next_cursor: str | None


class InvalidCursor(ValueError):
    """A cursor that was not produced by `encode_cursor` (edited or truncated)."""


def encode_cursor(values: list[Any]) -> str:
    raw = json.dumps(values, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(token: str, *, types: tuple[type, ...]) -> list[Any]:
    """The values of a cursor, checked against the expected types (None allowed for floats)."""
    try:
        padded = token + "=" * (-len(token) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidCursor("The page cursor is not valid; start again from the first page.") from exc
    if not isinstance(values, list) or len(values) != len(types):
        raise InvalidCursor("The page cursor is not valid; start again from the first page.")
    for value, expected in zip(values, types, strict=True):
        ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
        if expected is float:
            ok = value is None or (isinstance(value, int | float) and not isinstance(value, bool))
        if not ok:
            raise InvalidCursor("The page cursor is not valid; start again from the first page.")
    return values
