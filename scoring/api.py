"""The message API: ingest (single and bulk), read one, list with filters. Thin views."""

from __future__ import annotations

from typing import Any

import django_filters
from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from compliance_site.api_errors import ApiError, conflict, too_large
from compliance_site.parsers import RawEmailParser, StrictJSONParser
from scoring import selectors
from scoring.constants import MessageStatus
from scoring.models import Message
from scoring.permissions import CanIngest, CanReadMessages
from scoring.serializers import (
    BulkInSerializer,
    MessageAcceptedSerializer,
    MessageDetailSerializer,
    MessageInSerializer,
    MessageListSerializer,
)
from scoring.services.ingest import (
    IngestConflict,
    IngestInvalid,
    message_ingest,
    messages_ingest_bulk,
)
from scoring.services.sources import mail_limits, sources_ingest
from scoring.sources.errors import SIZE_CODES, SourceError
from scoring.sources.mail import parse_email


def _require_body(request: Request) -> Any:
    """DRF turns an empty body into {} without calling the parser: refuse it explicitly."""
    data = request.data
    if not request.META.get("CONTENT_LENGTH") and data in ({}, None):
        raise ApiError(status_code=400, code="empty_body", message="The request body is empty.")
    return data


def _invalid(exc: IngestInvalid) -> ApiError:
    if exc.code == "too_large":
        return too_large(str(exc))
    error = ApiError(status_code=400, code=exc.code, message=str(exc))
    return error


class MessageIngestView(APIView):
    """POST one message: 202 when stored, 200 when the identical message exists, 409 when the
    external id is already used by a different body."""

    parser_classes = [StrictJSONParser]

    def get_permissions(self):
        return [CanIngest()] if self.request.method == "POST" else [CanReadMessages()]

    @extend_schema(
        request=MessageInSerializer,
        responses={202: MessageAcceptedSerializer, 200: MessageAcceptedSerializer, 409: OpenApiResponse()},
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


class MessageBulkIngestView(APIView):
    """POST {"messages": [...]} (up to BULK_MAX_ITEMS): one result per item, in order."""

    parser_classes = [StrictJSONParser]
    permission_classes = [CanIngest]

    @extend_schema(request=BulkInSerializer, responses={202: OpenApiResponse(description="Per-item results")})
    def post(self, request: Request) -> Response:
        data = _require_body(request)
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise ApiError(
                status_code=400,
                code="invalid",
                message='The body must be {"messages": [ ... ]}, a list of messages.',
            )
        raw_items = data["messages"]
        if not raw_items:
            raise ApiError(status_code=400, code="empty_list", message="The messages list is empty.")
        if len(raw_items) > settings.BULK_MAX_ITEMS:
            raise too_large(
                f"{len(raw_items):,} messages in one request; the limit is {settings.BULK_MAX_ITEMS:,}."
            )
        items: list[Any] = []
        for raw in raw_items:
            if not isinstance(raw, dict):
                items.append(IngestInvalid("Each message must be a JSON object.", code="invalid"))
                continue
            serializer = MessageInSerializer(data=raw)
            if serializer.is_valid():
                items.append(serializer.to_incoming())
            else:
                field, errors = next(iter(serializer.errors.items()))
                items.append(
                    IngestInvalid(f"{field}: {' '.join(map(str, errors))}", code="invalid", field=field)
                )
        results = messages_ingest_bulk(items=items, submitted_by=request.user)
        body = {
            "created": sum(r.status == "created" for r in results),
            "duplicates": sum(r.status == "duplicate" for r in results),
            "errors": sum(r.status == "error" for r in results),
            "results": [_bulk_result(r) for r in results],
        }
        accepted = body["created"] + body["duplicates"]
        return Response(body, status=status.HTTP_202_ACCEPTED if accepted else status.HTTP_400_BAD_REQUEST)


ERROR_BODY = inline_serializer(
    "SourceIngestError",
    fields={
        "error": inline_serializer(
            "SourceIngestErrorDetail",
            fields={
                "code": serializers.CharField(),
                "message": serializers.CharField(),
                "details": serializers.JSONField(allow_null=True),
            },
        )
    },
)
RAW_ERRORS = (
    "malformed_mime, not_an_email, no_text_part, unknown_charset, charset_mismatch, too_many_parts, "
    "nested_too_deep, message_loop, empty_body, invalid (the text fails the message checks)"
)


def _raw_error(code: str, message: str) -> ApiError:
    if code == "conflict":
        return conflict(message)
    return ApiError(status_code=413 if code in SIZE_CODES else 400, code=code, message=message)


class MessageRawIngestView(APIView):
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
            "Nothing is stored when the message is refused."
        ),
        request={"message/rfc822": OpenApiTypes.BINARY},
        responses={
            202: OpenApiResponse(MessageAcceptedSerializer, description="Stored and queued for scoring."),
            200: OpenApiResponse(
                MessageAcceptedSerializer, description="Already stored (same Message-ID, same text)."
            ),
            400: OpenApiResponse(ERROR_BODY, description=f"Refused; error.code is one of: {RAW_ERRORS}."),
            401: OpenApiResponse(ERROR_BODY, description="No or a bad token (not_authenticated)."),
            403: OpenApiResponse(ERROR_BODY, description="Not an ingest account (permission_denied)."),
            409: OpenApiResponse(
                ERROR_BODY, description="The Message-ID is stored with another text (conflict)."
            ),
            413: OpenApiResponse(
                ERROR_BODY,
                description="Too large; error.code: message_too_large, attachment_too_large, archive_bomb "
                "(a zip attachment that would expand past the limits), too_large (the text over "
                "MAX_BODY_CHARS).",
            ),
            415: OpenApiResponse(ERROR_BODY, description="Not message/rfc822 (unsupported_media_type)."),
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


class MessageFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=MessageStatus.choices)
    flagged = django_filters.BooleanFilter(field_name="routing_prediction__flagged")
    claim_type = django_filters.CharFilter(field_name="routing_prediction__claim_type__code")
    qa_sample = django_filters.BooleanFilter(field_name="is_qa_sample")
    rule_hit = django_filters.BooleanFilter(field_name="has_rule_hit")
    received_after = django_filters.IsoDateTimeFilter(field_name="received_at", lookup_expr="gte")
    received_before = django_filters.IsoDateTimeFilter(field_name="received_at", lookup_expr="lt")

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
    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class MessageListIngestView(MessageIngestView, generics.ListAPIView):
    """GET lists messages (filters, cursor pagination); POST ingests one message."""

    serializer_class = MessageListSerializer
    filterset_class = MessageFilter
    pagination_class = MessageCursorPagination

    def get_queryset(self):
        return selectors.messages_for_api_list()


class MessageDetailView(generics.RetrieveAPIView):
    """GET one message with its prediction, rule matches, explanations and decisions."""

    permission_classes = [CanReadMessages]
    serializer_class = MessageDetailSerializer

    def get_queryset(self):
        return selectors.messages_for_api_detail(self.request.user)
