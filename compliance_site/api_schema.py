"""The OpenAPI schema tells every status an operation can answer, each with the one error body
(core.api_errors). drf-spectacular documents what a view declares; the statuses that
the framework itself answers (authentication, roles, throttling, validation, a missing object, a
body too large or of the wrong type) are added here, by one rule per status, to every operation.
The schemathesis run in the test suite holds the schema to what the API does."""

from __future__ import annotations

from typing import Any

ERROR_REF = {"$ref": "#/components/schemas/Error"}

# status -> what it means, in the words the schema shows.
ERROR_STATUSES = {
    "400": "The request is not valid (a parameter or the body): `error.details` says what.",
    "401": "No credentials, or a token that is unknown, revoked or expired.",
    "403": "Your role does not allow this operation.",
    "404": "No such object (or not yours to read): the path's id, `model_version`, an unreadable "
    "`cursor`, or no API endpoint at this address.",
    "413": "The request body, a message body or the number of messages is over its limit.",
    "415": "The body is not application/json.",
    "429": "Too many requests for your account: retry after the `Retry-After` seconds.",
}


# Query parameters that name an object (or a page of a list), which may not exist: a 404.
OBJECT_PARAMETERS = {"cursor", "model_version"}


def _errors_for(path: str, operation: dict[str, Any]) -> list[str]:
    statuses = ["401", "403", "429"]
    parameters = operation.get("parameters", [])
    if "requestBody" in operation or any(p.get("in") == "query" for p in parameters):
        statuses.append("400")
    if "{" in path or any(p.get("name") in OBJECT_PARAMETERS for p in parameters):
        statuses.append("404")
    if "requestBody" in operation:
        statuses += ["413", "415"]
    return statuses


# A free-text query parameter may not hold a NUL character: django-filter refuses it (400, "Null
# characters are not allowed") and no stored text could match it. The schema says so.
NO_NUL = "^[^\\x00]*$"


def _free_text_query_strings(operation: dict[str, Any]) -> list[dict[str, Any]]:
    """The schemas of an operation's query parameters that are free strings (no enum, format or
    pattern of their own)."""
    found = []
    for parameter in operation.get("parameters", []):
        schema = parameter.get("schema", {})
        free = not {"enum", "format", "pattern"} & set(schema)
        if parameter.get("in") == "query" and schema.get("type") == "string" and free:
            found.append(schema)
    return found


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the Error component's statuses on every operation
    that can answer them, each documented with the Error body (a view's own description of a
    status, such as a 409, is kept); and a free-text query parameter's pattern, which refuses a
    NUL character as the API does."""
    for path, methods in result.get("paths", {}).items():
        for operation in methods.values():
            for schema in _free_text_query_strings(operation):
                schema["pattern"] = NO_NUL
            responses = operation.setdefault("responses", {})
            for status in _errors_for(path, operation):
                response = responses.setdefault(status, {"description": ERROR_STATUSES[status]})
                response.setdefault("content", {"application/json": {"schema": ERROR_REF}})
    return result
