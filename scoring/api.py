"""The message API: ingest (single and bulk), read one, list with filters. Thin views."""

from __future__ import annotations

from typing import Any

import django_filters
from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from compliance_site.api_errors import ApiError, conflict, too_large
from compliance_site.parsers import StrictJSONParser
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
