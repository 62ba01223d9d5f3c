"""A JSON parser that tells bad bodies apart: empty, not UTF-8, not JSON (nested too deep included).

(A body over DATA_UPLOAD_MAX_MEMORY_SIZE never reaches the parser: Django refuses to read it
and core.api_errors turns that into a 413.)"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser

from core.api_errors import ApiError


class StrictJSONParser(JSONParser):
    """Decodes strictly as UTF-8 and parses strict JSON (no NaN/Infinity), raising an error
    with a specific code for each way it can fail."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        raw = stream.read() if stream is not None else b""
        if not raw.strip():
            raise ApiError(status_code=400, code="empty_body", message="The request body is empty.")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ApiError(
                status_code=400,
                code="invalid_encoding",
                message=f"The request body is not valid UTF-8 (byte {exc.start}).",
            ) from exc
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:
            raise ParseError(f"The request body is not valid JSON: {exc}") from exc
        except RecursionError as exc:
            # Arrays or objects nested deeper than the interpreter's stack (about a thousand
            # levels): no request of this API nests more than three.
            raise ParseError("The request body is not valid JSON: it is nested too deep.") from exc


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


class RawEmailParser(BaseParser):
    """One RFC 5322 message, `Content-Type: message/rfc822`: its bytes, read up to
    EMAIL_MAX_MESSAGE_BYTES (a longer body is refused with 413 before it is all read)."""

    media_type = "message/rfc822"

    def parse(self, stream, media_type=None, parser_context=None) -> bytes:
        limit = settings.EMAIL_MAX_MESSAGE_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ApiError(
                status_code=413,
                code="message_too_large",
                message=f"The message is over the limit of {limit:,} bytes (EMAIL_MAX_MESSAGE_BYTES).",
            )
        if not raw.strip():
            raise ApiError(status_code=400, code="empty_body", message="The request body is empty.")
        return raw
