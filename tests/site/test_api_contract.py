"""The API does what its OpenAPI schema says, for every role: schemathesis generates requests from
the schema (valid ones and invalid ones), sends them to the WSGI app with a role's token, and
runs every check (statuses and bodies as documented, valid data accepted, invalid data refused,
no server error, authentication honoured, ...). Zero failures.

Each operation is fuzzed with the token of every role allowed to use it; every other role's
token gets one valid request per operation, which must be refused as documented (403, the
error body). Bounded: MAX_EXAMPLES per operation and role, derandomized, so that CI sees the
same requests on every run; `schemathesis run` against a running server explores further. One
case goes over live HTTP (pytest-django's live_server) with the schema loaded from the served
/api/schema/, so that what the server serves, not only what the generator builds, is held to it."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.config import SchemathesisConfig
from schemathesis.core import NOT_SET

from core.roles import Role
from reviews.tokens import api_token_issue
from tests.factories import ModelVersionFactory, UserFactory, reviewable_message

MAX_EXAMPLES = 10
REVIEWER, AUDITOR, ADMIN, SERVICE = (role.value for role in Role)
NO_ROLE = "no_role"
ROLES = (REVIEWER, AUDITOR, ADMIN, SERVICE, NO_ROLE)

READS = ["GET /api/messages/", "GET /api/messages/{id}/"]
INGEST = [
    "POST /api/messages/",
    "POST /api/messages/bulk/",
    "POST /api/messages/raw/",
    "GET /api/messages/status/",
    "GET /api/messages/{id}/status/",
]
METRICS_PATHS = r"^/api/metrics/"

CONFIG = SchemathesisConfig.from_dict(
    {
        "generation": {
            "mode": "all",
            "max-examples": MAX_EXAMPLES,
            "deterministic": True,
            "database": "none",
        },
        "checks": {
            # A message body or a bulk list over its limit is a 413 (documented), not a 400.
            "negative_data_rejection": {
                "expected-statuses": ["400", "401", "403", "404", "405", "409", "413", "415", "429"]
            },
        },
        "phases": {"stateful": {"enabled": False}},
    }
)


# The raw-email endpoint's body is bytes with no JSON schema to generate from: generated mail
# (the schema cannot tell arbitrary bytes from an email, so every generated body is one; bad mail
# is tests/scoring/test_api_raw.py's).
_TEXT = r"[A-Za-z][A-Za-z0-9 .,%]{0,120}"
schemathesis.openapi.media_type(
    "message/rfc822",
    st.builds(
        lambda subject, text, n: (
            f"From: Ann <ann@bank.example>\r\nTo: bob@client.example\r\nSubject: {subject}\r\n"
            f"Message-ID: <{n}@bank.example>\r\n\r\n{text}\r\n"
        ).encode(),
        st.from_regex(_TEXT, fullmatch=True),
        st.from_regex(_TEXT, fullmatch=True),
        st.integers(min_value=0, max_value=10**6),
    ),
)


# A message's received_at may not lie in the future beyond RECEIVED_AT_MAX_SKEW_SECONDS: no JSON
# Schema keyword compares a date with the server's clock, so the schema says it in words, and a
# generated one in the future is moved back by whole 400-year Gregorian cycles (a leap day stays
# one) to before 2001, as a feed's clock would have it.
def _in_the_past(value: object) -> object:
    if not isinstance(value, str) or not re.match(r"^\d{4}-", value):
        return value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if (moment if moment.tzinfo else moment.replace(tzinfo=UTC)) <= datetime.now(UTC):
        return value
    year = moment.year - 400 * -(-(moment.year - 2000) // 400)
    return f"{year:04d}{value[4:]}"


def _message_in_the_past(message: object) -> object:
    if isinstance(message, dict) and "received_at" in message:
        return {**message, "received_at": _in_the_past(message["received_at"])}
    return message


def _schema_document() -> dict:
    """The schema /api/schema/ serves, as JSON (generated here: serving it needs a signed-in user)."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))


schema = schemathesis.openapi.from_dict(_schema_document(), config=CONFIG)
schema.app = get_wsgi_application()


@schema.hook
def map_body(context, body):
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        return {**body, "messages": [_message_in_the_past(m) for m in body["messages"]]}
    return _message_in_the_past(body)


reads = schema.include(name=READS)
ingest = schema.include(name=INGEST)
metrics = schema.include(path_regex=METRICS_PATHS)


def allowed_roles(label: str) -> set[str]:
    if label in READS:
        return {REVIEWER, AUDITOR, ADMIN}
    if label in INGEST:
        return {SERVICE, ADMIN}
    if label.startswith("GET /api/metrics/"):
        return {ADMIN}
    raise AssertionError(f"{label}: say in this test which roles may use it")


@pytest.fixture
def wsgi_in_the_test_transaction(db):
    """Django's WSGI handler closes the database connection after each request when it is not
    in autocommit, as inside a test's transaction; its test client stops that, and so does this."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def token_for(role: str) -> str:
    user = UserFactory(username=f"contract_{role}", role=None if role == NO_ROLE else role)
    return api_token_issue(user=user).token


@pytest.fixture
def token(request, wsgi_in_the_test_transaction) -> str:
    """A token of one role's account, with something of each kind in the database to find."""
    ModelVersionFactory(is_active=True)
    reviewable_message()
    return token_for(request.param)


# The token fixture's account and rows serve every example of one operation and role. Generating
# bodies that match the schema's text pattern (scoring.text) is slow on a busy 2-core CPU, which
# failed hypothesis's too_slow health check now and then: a statement about the machine, not the API.
fixture_shared_by_examples = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@reads.parametrize()
@pytest.mark.parametrize("token", [REVIEWER, AUDITOR, ADMIN], indirect=True)
@fixture_shared_by_examples
def test_readers_get_what_the_schema_says(case, token):
    case.call_and_validate(headers={"Authorization": f"Token {token}"})


# Generating bodies that match the text pattern makes these the slowest tests outside the real
# model's (about 85 s of CPU on a 2-core AMD EPYC): `slow`, so `make test-fast` leaves them to
# `make test` and CI.
@pytest.mark.slow
@ingest.parametrize()
@pytest.mark.parametrize("token", [SERVICE, ADMIN], indirect=True)
@fixture_shared_by_examples
def test_feeds_get_what_the_schema_says(case, token):
    case.call_and_validate(headers={"Authorization": f"Token {token}"})


@metrics.parametrize()
@pytest.mark.parametrize("token", [ADMIN], indirect=True)
# The nine endpoints share their parameters and their view (monitoring.api.MetricsView): fewer
# random examples each; the coverage phase still tries every boundary of every parameter.
@settings(max_examples=3, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_the_metrics_endpoints_give_compliance_admins_what_the_schema_says(case, token):
    case.call_and_validate(headers={"Authorization": f"Token {token}"})


# --- Over live HTTP, with the schema the server serves --------------------------------------------

# (Not schemathesis.pytest.from_fixture: its lazy schema reads a pytest node attribute this pytest
# no longer has. The schema is loaded in the test and one operation driven by hypothesis.)
LIVE_OPERATIONS = ["GET /api/messages/{id}/", "POST /api/messages/"]


@pytest.mark.slow  # a live server and generated requests: 20-25 s
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_served_schema_holds_over_live_http(live_server):
    # given a server on a socket, an admin's token, and the schema as GET /api/schema/ serves it
    ModelVersionFactory(is_active=True)
    message = reviewable_message()
    auth = {"Authorization": f"Token {token_for(ADMIN)}"}
    served = schemathesis.openapi.from_url(
        f"{live_server.url}/api/schema/?format=json", config=CONFIG, headers=auth, timeout=60
    )
    served.config.update(base_url=live_server.url)
    served.hook(map_body)
    sent: list[tuple[str, str, int]] = []

    for label in LIVE_OPERATIONS:
        operation = served.find_operation_by_label(label)
        assert operation is not None, f"{label} is not in the served schema"
        known_id = {"id": message.pk} if "{id}" in operation.path else None

        @given(case=operation.as_strategy(path_parameters=known_id))
        @settings(max_examples=5, deadline=None, database=None, derandomize=True)
        def holds(case):
            # when the request goes over HTTP, then the response is what the schema says
            response = case.call_and_validate(headers=auth, timeout=60)
            sent.append((case.operation.label, response.request.url, response.status_code))

        holds()

    assert all(url.startswith(live_server.url) for _, url, _ in sent)  # over a socket, not WSGI
    assert ("GET /api/messages/{id}/", 200) in {(label, status) for label, _, status in sent}
    assert "POST /api/messages/" in {label for label, _, _ in sent}


VALID_BODIES = {
    "POST /api/messages/": {"external_id": "contract-1", "body": "Returns are guaranteed."},
    "POST /api/messages/bulk/": {"messages": [{"external_id": "contract-2", "body": "Hello."}]},
}


def test_every_role_without_access_is_refused_as_the_schema_says(wsgi_in_the_test_transaction):
    message = reviewable_message()
    tokens = {role: token_for(role) for role in ROLES}
    checked = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        for role in sorted(set(ROLES) - allowed_roles(operation.label)):
            case = operation.Case(
                path_parameters={"id": message.pk} if "{id}" in operation.path else None,
                body=VALID_BODIES.get(operation.label, NOT_SET),
                media_type="application/json" if operation.label in VALID_BODIES else None,
            )
            response = case.call_and_validate(headers={"Authorization": f"Token {tokens[role]}"})
            assert response.status_code == 403, (operation.label, role, response.status_code)
            checked += 1
    # reads: ingest service, no role; ingest (5): reviewer, auditor, no role; metrics: all but the admin
    assert checked == 2 * 2 + 5 * 3 + 9 * 4
