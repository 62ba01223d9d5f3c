"""The message API: ingest (single and bulk), read one, list with filters. Thin views."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import django_filters
from django import forms
from django.conf import settings
from django_filters.fields import IsoDateTimeField
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api_errors import ApiError, ErrorSerializer, conflict, too_large
from core.parsers import RawEmailParser, StrictJSONParser
from core.permissions import CanIngest, CanReadMessages, MethodNotAllowedFirst
from scoring import selectors
from scoring.constants import FeedStatus, MessageStatus, statuses_of
from scoring.models import Message
from scoring.serializers import (
    BulkInSerializer,
    BulkResultSerializer,
    MessageAcceptedSerializer,
    MessageInSerializer,
    MessageListSerializer,
    MessageStatusDetailSerializer,
)
from scoring.services.ingest import (
    IncomingMessage,
    IngestConflict,
    IngestInvalid,
    message_ingest,
    messages_ingest_bulk,
    validate_incoming,
)
from scoring.services.sources import mail_limits, sources_ingest
from scoring.sources.errors import SIZE_CODES, SourceError
from scoring.sources.mail import parse_email

ERROR_RESPONSE = ErrorSerializer


def _require_body(request: Request) -> Any:
    """The parsed body, or empty_body for a request without one. DRF reads no body when its
    Content-Length is 0 (as clients send it: "0") or absent, and answers {} without calling the
    parser (which refuses a body of only whitespace itself); its stream is then None."""
    data = request.data
    if request.stream is None:
        raise ApiError(status_code=400, code="empty_body", message="The request body is empty.")
    return data


def _invalid(exc: IngestInvalid) -> ApiError:
    if exc.code == "too_large":
        return too_large(str(exc))
    # `invalid` carries its errors per field (core.api_errors), as the serializer's do
    details = {exc.field: [str(exc)]} if exc.code == "invalid" and exc.field else None
    return ApiError(status_code=400, code=exc.code, message=str(exc), details=details)


class MessageIngestView(MethodNotAllowedFirst, APIView):
    """POST one message: 202 when stored, 200 when the identical message exists in the caller's
    feed, 409 when the feed already used the external id for a different body."""

    parser_classes = [StrictJSONParser]

    def get_permissions(self):
        return [CanIngest()] if self.request.method == "POST" else [CanReadMessages()]

    @extend_schema(
        request=MessageInSerializer,
        responses={
            202: OpenApiResponse(MessageAcceptedSerializer, description="Stored; it will be scored."),
            200: OpenApiResponse(
                MessageAcceptedSerializer, description="The same message (id and body) is already stored."
            ),
            409: OpenApiResponse(
                ERROR_RESPONSE, description="Your feed already stored this external_id with another body."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        data = _require_body(request)
        if not isinstance(data, dict):
            raise ApiError(status_code=400, code="invalid", message="The body must be a JSON object.")
        serializer = MessageInSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        try:
            outcome = message_ingest(item=serializer.to_incoming(), submitted_by=request.user)
        except IngestInvalid as exc:
            raise _invalid(exc) from exc
        except IngestConflict as exc:
            raise conflict(str(exc)) from exc
        code = status.HTTP_202_ACCEPTED if outcome.created else status.HTTP_200_OK
        return Response(MessageAcceptedSerializer(outcome.message).data, status=code)


def _bulk_items(raw_items: list[Any]) -> tuple[list[IncomingMessage], list[dict[str, Any]]]:
    """Each item checked as a single message would be: the valid ones, and one error per
    invalid item (index, code, message, field)."""
    items: list[IncomingMessage] = []
    errors: list[dict[str, Any]] = []
    for index, raw in enumerate(raw_items):
        if not isinstance(raw, dict):
            errors.append(_item_error(index, "invalid", "Each message must be a JSON object.", None))
            continue
        serializer = MessageInSerializer(data=raw)
        if not serializer.is_valid():
            # every field's errors (two misspelt keys are both named); `field` is the first
            field = next(iter(serializer.errors))
            message = "; ".join(f"{name}: {' '.join(map(str, m))}" for name, m in serializer.errors.items())
            errors.append(_item_error(index, "invalid", message, field))
            continue
        item = serializer.to_incoming()
        try:
            validate_incoming(item)
        except IngestInvalid as exc:
            errors.append(_item_error(index, exc.code, str(exc), exc.field))
            continue
        items.append(item)
    return items, errors


def _item_error(index: int, code: str, message: str, field: str | None) -> dict[str, Any]:
    return {"index": index, "code": code, "message": message, "field": field}


class MessageBulkIngestView(MethodNotAllowedFirst, APIView):
    """POST {"messages": [...]} (1 to BULK_MAX_ITEMS). Every item is checked first: one that is
    not a valid message refuses the whole request (400, each bad item's reason, nothing stored).
    Then each item is stored or found: one result per item, in order."""

    parser_classes = [StrictJSONParser]
    permission_classes = [CanIngest]

    @extend_schema(
        request=BulkInSerializer,
        responses={
            202: OpenApiResponse(
                BulkResultSerializer,
                description="At least one message is stored or was already stored; one result per item.",
            ),
            409: OpenApiResponse(
                ERROR_RESPONSE,
                description="Every item reuses an external_id of your feed with another body: nothing "
                "stored; `details` has one result per item.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        data = _require_body(request)
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise ApiError(
                status_code=400,
                code="invalid",
                message='The body must be {"messages": [ ... ]}, a list of messages.',
            )
        unknown = sorted(set(data) - set(BulkInSerializer().fields))
        if unknown:
            raise ApiError(
                status_code=400,
                code="invalid",
                message=f"Unknown field{'s' if len(unknown) > 1 else ''} in the body: {', '.join(unknown)}. "
                'The body is {"messages": [ ... ]} and nothing else.',
                details={name: ["Not a field of this body; its one field is messages."] for name in unknown},
            )
        raw_items = data["messages"]
        if not raw_items:
            raise ApiError(status_code=400, code="empty_list", message="The messages list is empty.")
        if len(raw_items) > settings.BULK_MAX_ITEMS:
            raise too_large(
                f"{len(raw_items):,} messages in one request; the limit is {settings.BULK_MAX_ITEMS:,}."
            )
        items, errors = _bulk_items(raw_items)
        if errors:
            raise ApiError(
                status_code=400,
                code="invalid",
                message=f"{len(errors)} of {len(raw_items)} messages are not valid; nothing was stored.",
                details=errors,
            )
        results = messages_ingest_bulk(items=items, submitted_by=request.user)
        body = {
            "created": sum(r.status == "created" for r in results),
            "duplicates": sum(r.status == "duplicate" for r in results),
            "errors": sum(r.status == "error" for r in results),
            "results": [_bulk_result(r) for r in results],
        }
        if body["created"] + body["duplicates"] == 0:
            raise ApiError(
                status_code=status.HTTP_409_CONFLICT,
                code="conflict",
                message="Every message reuses an external_id of your feed with another body; "
                "nothing was stored.",
                details=body["results"],
            )
        return Response(body, status=status.HTTP_202_ACCEPTED)


RAW_ERRORS = (
    "malformed_mime, not_an_email, no_text_part, encrypted, unknown_charset, charset_mismatch, "
    "too_many_parts, nested_too_deep, message_loop, empty_body, invalid (the text fails the message checks)"
)


def _raw_error(code: str, message: str) -> ApiError:
    if code == "conflict":
        return conflict(message)
    return ApiError(status_code=413 if code in SIZE_CODES else 400, code=code, message=message)


class MessageRawIngestView(MethodNotAllowedFirst, APIView):
    """POST one email as it travels (RFC 5322, `Content-Type: message/rfc822`): parsed
    (scoring.sources.mail), stored with its headers, attachments and thread, queued for scoring.
    external_id is its Message-ID (else the sha256 of its bytes), so posting it again is harmless."""

    parser_classes = [RawEmailParser]
    permission_classes = [CanIngest]

    @extend_schema(
        summary="Ingest one raw email (message/rfc822)",
        description=(
            "The body is one RFC 5322 message, MIME and all. Its text (text/plain preferred, else "
            "its HTML as text), its text attachments (text/plain, text/csv, .txt, .csv, text files "
            "in a zip) and the text of attached messages are scored; other attachments are listed "
            "as not scored. Limits are settings: EMAIL_MAX_MESSAGE_BYTES, EMAIL_MAX_ATTACHMENT_BYTES, "
            "EMAIL_MAX_PARTS, EMAIL_MAX_DEPTH, ARCHIVE_MAX_BYTES, ARCHIVE_MAX_RATIO, ARCHIVE_MAX_MEMBERS. "
            "NUL characters are removed from what is stored (its text, attachments and headers); a "
            "Date in the future is replaced by the arrival time. "
            "Nothing is stored when the message is refused."
        ),
        request={"message/rfc822": OpenApiTypes.BINARY},
        responses={
            202: OpenApiResponse(MessageAcceptedSerializer, description="Stored and queued for scoring."),
            200: OpenApiResponse(
                MessageAcceptedSerializer, description="Already stored (same Message-ID, same text)."
            ),
            400: OpenApiResponse(ERROR_RESPONSE, description=f"Refused; error.code is one of: {RAW_ERRORS}."),
            401: OpenApiResponse(ERROR_RESPONSE, description="No or a bad token (not_authenticated)."),
            403: OpenApiResponse(ERROR_RESPONSE, description="Not an ingest account (permission_denied)."),
            409: OpenApiResponse(
                ERROR_RESPONSE, description="The Message-ID is stored with another text (conflict)."
            ),
            413: OpenApiResponse(
                ERROR_RESPONSE,
                description="Too large; error.code: message_too_large, attachment_too_large, archive_bomb "
                "(a zip attachment that would expand past the limits), too_large (the text over "
                "MAX_BODY_CHARS).",
            ),
            415: OpenApiResponse(ERROR_RESPONSE, description="Not message/rfc822 (unsupported_media_type)."),
        },
        examples=[
            OpenApiExample(
                "A plain email",
                value="From: Ann <ann@bank.example>\r\nTo: bob@client.example\r\nSubject: Fund\r\n"
                "Message-ID: <1@bank.example>\r\n\r\nThe payouts are certain.\r\n",
                request_only=True,
                media_type="message/rfc822",
            )
        ],
    )
    def post(self, request: Request) -> Response:
        raw = request.data
        if not isinstance(raw, bytes | bytearray) or not raw:
            raise ApiError(status_code=400, code="empty_body", message="The request body is empty.")
        try:
            item = parse_email(bytes(raw), limits=mail_limits())
        except SourceError as exc:
            raise _raw_error(exc.code, exc.message) from exc
        (result,) = sources_ingest(items=[item], submitted_by=request.user, gather=True)
        if result.status == "error":
            raise _raw_error(result.error_code, result.error)
        code = status.HTTP_202_ACCEPTED if result.status == "created" else status.HTTP_200_OK
        return Response(MessageAcceptedSerializer(result.message).data, status=code)


def _bulk_result(result) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": result.index, "result": result.status}
    if result.message is not None:
        entry.update(MessageAcceptedSerializer(result.message).data)
    if result.status == "error":
        entry["error"] = {"code": result.error_code, "message": result.error, "field": result.field}
    return entry


class StrictBooleanField(forms.Field):
    """`true` or `false`, nothing else: django-filter's own boolean takes any other value (`null`,
    `maybe`, an empty one) as "no filter" and answers as if the parameter were absent."""

    def to_python(self, value: Any) -> bool | None:
        if value is None:
            return None  # the parameter is absent
        if value in ("true", "false"):
            return value == "true"
        raise forms.ValidationError("Must be true or false.", code="invalid")

    def validate(self, value: bool | None) -> None:
        pass


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


class StrictIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 date-time, compared in UTC; an empty value is refused, not taken for "no
    filter". (PostgreSQL refuses a UTC offset beyond 15:59, which ISO 8601 allows.)"""

    def to_python(self, value: Any):
        if value == "":
            raise forms.ValidationError("Must be an ISO 8601 date-time.", code="invalid")
        moment = super().to_python(value)
        if moment is None or moment.tzinfo is None:
            return moment
        try:
            return moment.astimezone(UTC)
        except OverflowError as exc:
            raise forms.ValidationError("The date-time is out of range in UTC.", code="invalid") from exc


class StrictIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = StrictIsoDateTimeField


class MessageFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=MessageStatus.choices)
    flagged = StrictBooleanFilter(field_name="routing_prediction__flagged")
    claim_type = django_filters.CharFilter(field_name="routing_prediction__claim_type__code")
    qa_sample = StrictBooleanFilter(field_name="is_qa_sample")
    rule_hit = StrictBooleanFilter(field_name="has_rule_hit")
    received_after = StrictIsoDateTimeFilter(field_name="received_at", lookup_expr="gte")
    received_before = StrictIsoDateTimeFilter(field_name="received_at", lookup_expr="lt")

    class Meta:
        model = Message
        fields = [
            "status",
            "flagged",
            "claim_type",
            "qa_sample",
            "rule_hit",
            "received_after",
            "received_before",
        ]


class MessageCursorPagination(CursorPagination):
    """Newest first. `page_size` is 1 to 500 (another value is a 400, not silently the default);
    an unreadable `cursor` is a 404 (DRF's)."""

    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise ApiError(
                status_code=400,
                code="invalid",
                message=f"page_size must be an integer from 1 to {self.max_page_size}.",
                details={"page_size": [f"An integer from 1 to {self.max_page_size}."]},
            )
        return int(raw)

    def get_schema_operation_parameters(self, view) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": self.max_page_size}
        return parameters


class MessageListIngestView(MessageIngestView, generics.ListAPIView):
    """GET lists messages (filters, cursor pagination) for reviewers, auditors and compliance
    admins; POST ingests one message (ingest services and compliance admins)."""

    serializer_class = MessageListSerializer
    filterset_class = MessageFilter
    pagination_class = MessageCursorPagination

    def get_queryset(self):
        return selectors.messages_for_api_list()


class MessageStatusFilter(django_filters.FilterSet):
    external_id = django_filters.CharFilter()
    status = django_filters.MultipleChoiceFilter(choices=FeedStatus.choices, method="filter_status")
    received_after = StrictIsoDateTimeFilter(field_name="received_at", lookup_expr="gte")
    received_before = StrictIsoDateTimeFilter(field_name="received_at", lookup_expr="lt")

    class Meta:
        model = Message
        fields = ["external_id", "status", "received_after", "received_before"]

    def filter_status(self, queryset, name: str, value: list[str]):
        if not value:
            return queryset
        return queryset.filter(status__in=[s for feed_status in value for s in statuses_of(feed_status)])


class MessageStatusListView(MethodNotAllowedFirst, generics.ListAPIView):
    """GET the status of the messages your feed submitted (an ingest service's, or a compliance
    admin's own): no body, score or decision, and nothing of another feed."""

    permission_classes = [CanIngest]
    serializer_class = MessageStatusDetailSerializer
    filterset_class = MessageStatusFilter
    pagination_class = MessageCursorPagination

    def get_queryset(self):
        return selectors.message_statuses_of_feed(self.request.user)


class MessageStatusView(MethodNotAllowedFirst, generics.RetrieveAPIView):
    """GET the status of one message your feed submitted; another feed's is a 404."""

    permission_classes = [CanIngest]
    serializer_class = MessageStatusDetailSerializer

    def get_queryset(self):
        return selectors.message_statuses_of_feed(self.request.user)
