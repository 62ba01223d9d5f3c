"""Keyset pagination cursors: an opaque, URL-safe token holding the sort key of the last row.

Pages are found with a WHERE on the sort key instead of OFFSET, so page 500 costs what page 1
costs and rows inserted meanwhile do not shift what the reviewer sees.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import MAXYEAR, MINYEAR, datetime
from typing import Any

from django.db.models import QuerySet

PAGE_SIZE = 50
INVALID_CURSOR = "The page cursor is not valid; start again from the first page."


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
        raise InvalidCursor(INVALID_CURSOR) from exc
    if not isinstance(values, list) or len(values) != len(types):
        raise InvalidCursor(INVALID_CURSOR)
    for value, expected in zip(values, types, strict=True):
        ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
        if expected is float:
            ok = value is None or (isinstance(value, int | float) and not isinstance(value, bool))
        if not ok:
            raise InvalidCursor(INVALID_CURSOR)
    return values


def cursor_datetime(value: str) -> datetime:
    """A datetime from a cursor's ISO string (raises InvalidCursor for anything else)."""
    try:
        moment = datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise InvalidCursor(INVALID_CURSOR) from exc
    if moment.tzinfo is None or not MINYEAR < moment.year < MAXYEAR:
        # the pages' cursors are written from aware database times; an edited one at the ends of
        # the calendar would overflow when the query converts it to UTC
        raise InvalidCursor(INVALID_CURSOR)
    return moment


def keyset_page(queryset: QuerySet, *, size: int, cursor_of: Callable[[Any], list[Any]]) -> Page:
    """The first `size` rows of an ordered, already cursor-filtered queryset; the next page's
    cursor is `cursor_of(last row)`, and None when no row follows (one extra row is fetched)."""
    rows = list(queryset[: size + 1])
    if len(rows) <= size:
        return Page(rows, None)
    rows = rows[:size]
    return Page(rows, encode_cursor(cursor_of(rows[-1])))
