"""One JSON error shape for every API failure: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def _code_for(exc: Exception) -> str:
    if isinstance(exc, exceptions.ParseError):
        return "invalid_json"
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        return "not_authenticated"
    if isinstance(exc, exceptions.PermissionDenied):
        return "permission_denied"
    if isinstance(exc, exceptions.NotFound):
        return "not_found"
    if isinstance(exc, exceptions.ValidationError):
        return "invalid"
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return "unsupported_media_type"
    if isinstance(exc, exceptions.MethodNotAllowed):
        return "method_not_allowed"
    if isinstance(exc, exceptions.Throttled):
        return "throttled"
    return getattr(exc, "default_code", "error")


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        exc = too_large(
            f"The request body is over the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes."
        )
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(exc, exceptions.ValidationError):
        message = "The request is not valid."
        details: Any = data
    else:
        message = str(data.get("detail", data)) if isinstance(data, dict) else str(data)
        details = None
    code = getattr(exc, "error_code", None) or _code_for(exc)
    details = getattr(exc, "error_details", None) or details
    response.data = {"error": {"code": code, "message": message, "details": details}}
    return response


class ApiError(exceptions.APIException):
    """An API error with its own status, machine-readable code and, optionally, details."""

    def __init__(self, *, status_code: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(detail=message)
        self.status_code = status_code
        self.error_code = code
        self.error_details = details


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Machine-readable: invalid, not_found, conflict, throttled...")
    message = serializers.CharField(help_text="Fit to show a person.")
    details = serializers.JSONField(
        allow_null=True,
        help_text="For `invalid`: the errors per field (or per item of a bulk request); otherwise null.",
    )


class ErrorSerializer(serializers.Serializer):
    """The one shape of every API error (the schema's `Error`)."""

    error = ErrorDetailSerializer()


def conflict(message: str) -> ApiError:
    return ApiError(status_code=status.HTTP_409_CONFLICT, code="conflict", message=message)


def too_large(message: str) -> ApiError:
    return ApiError(status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, code="too_large", message=message)
