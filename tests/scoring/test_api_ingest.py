"""The ingestion API: good input is stored once; bad input gets a specific 4xx and writes nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from reviews.tokens import api_token_issue
from scoring.models import Message

pytestmark = pytest.mark.django_db

URL = "/api/messages/"
BULK_URL = "/api/messages/bulk/"


@pytest.fixture
def api(service_account):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(user=service_account).token}")
    return client


def post_raw(api, url, raw: bytes | str, content_type="application/json"):
    return api.generic("POST", url, data=raw, content_type=content_type)


def good(external_id="m-1", body="Our fund guarantees 12% returns every year."):
    return {"external_id": external_id, "body": body, "sender": "advisor@example.test", "channel": "email"}


def error_code(response) -> str:
    return response.json()["error"]["code"]


# --- the happy paths --------------------------------------------------------------------


def test_posting_a_message_stores_it_and_answers_202_with_its_status_url(api):
    response = api.post(URL, good(), format="json")

    assert response.status_code == 202
    body = response.json()
    message = Message.objects.get()
    assert body == {
        "id": message.pk,
        "external_id": "m-1",
        "status": "received",
        "url": f"/api/messages/{message.pk}/status/",
    }
    assert message.channel == "email" and message.sender == "advisor@example.test"


def test_the_same_message_posted_again_answers_200_with_the_stored_one(api):
    first = api.post(URL, good(), format="json").json()

    again = api.post(URL, good(), format="json")

    assert again.status_code == 200
    assert again.json()["id"] == first["id"]
    assert Message.objects.count() == 1


def test_a_reused_external_id_with_a_different_body_is_a_409_conflict(api):
    api.post(URL, good(), format="json")

    response = api.post(URL, good(body="Something else entirely."), format="json")

    assert response.status_code == 409
    assert error_code(response) == "conflict"
    assert "different body" in response.json()["error"]["message"]
    assert Message.objects.get().body.startswith("Our fund")


def test_bulk_ingest_reports_one_result_per_item_created_or_duplicate(api):
    items = [good("b-1"), good("b-3"), good("b-1")]

    response = api.post(BULK_URL, {"messages": items}, format="json")

    assert response.status_code == 202
    body = response.json()
    assert [r["result"] for r in body["results"]] == ["created", "created", "duplicate"]
    assert body["results"][2]["id"] == body["results"][0]["id"]
    assert body["results"][0]["status"] == "received"
    assert (body["created"], body["duplicates"], body["errors"]) == (2, 1, 0)
    assert set(Message.objects.values_list("external_id", flat=True)) == {"b-1", "b-3"}


def test_a_bulk_request_with_an_invalid_item_is_refused_whole_with_each_bad_items_reason(api):
    items = [good("b-1"), {"external_id": "b-2", "body": ""}, good("b-3"), "not an object"]

    response = api.post(BULK_URL, {"messages": items}, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "2 of 4 messages are not valid" in error["message"]
    assert [(d["index"], d["code"], d["field"]) for d in error["details"]] == [
        (1, "empty_body", "body"),
        (3, "invalid", None),
    ]
    assert Message.objects.count() == 0


def test_a_bulk_item_the_scorer_would_refuse_is_refused_by_the_same_rule_with_its_index(api):
    items = [good("b-1"), {"external_id": "b-2", "body": "\u200b\u200b\u200b"}, good("b-3", body="\u00ad")]

    response = api.post(BULK_URL, {"messages": items}, format="json")

    assert response.status_code == 400
    assert [(d["index"], d["code"], d["field"]) for d in response.json()["error"]["details"]] == [
        (1, "empty_body", "body"),
        (2, "empty_body", "body"),
    ]
    assert Message.objects.count() == 0


def test_an_unknown_field_is_a_400_naming_it_not_silently_dropped(api):
    # a misspelt received_at was dropped and the message stored as received now
    payload = {"external_id": "x", "body": "Hi", "bdy": "x", "recieved_at": "2020-01-01T00:00:00Z"}

    response = api.post(URL, payload, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert set(error["details"]) == {"bdy", "recieved_at"}
    assert "received_at" in error["details"]["recieved_at"][0]  # the fields there are
    assert Message.objects.count() == 0


def test_an_unknown_field_beside_another_error_is_named_with_it(api):
    response = api.post(URL, {"external_id": "x", "bdy": "Hi"}, format="json")

    assert response.status_code == 400
    assert set(response.json()["error"]["details"]) == {"bdy", "body"}


def test_a_bulk_item_with_unknown_fields_refuses_the_request_naming_them_with_its_index(api):
    items = [good("b-1"), {**good("b-2"), "bdy": "x", "recieved_at": "2020-01-01T00:00:00Z"}, good("b-3")]

    response = api.post(BULK_URL, {"messages": items}, format="json")

    assert response.status_code == 400
    (detail,) = response.json()["error"]["details"]
    assert (detail["index"], detail["code"], detail["field"]) == (1, "invalid", "bdy")
    assert "bdy" in detail["message"] and "recieved_at" in detail["message"]
    assert Message.objects.count() == 0


def test_an_unknown_top_level_field_of_a_bulk_request_is_a_400_naming_it(api):
    response = api.post(BULK_URL, {"messages": [good("b-1")], "dry_run": True}, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "dry_run" in error["message"]
    assert set(error["details"]) == {"dry_run"}
    assert Message.objects.count() == 0


def test_the_schema_closes_the_ingest_bodies_to_other_fields(api):
    schemas = api.get("/api/schema/?format=json").json()["components"]["schemas"]

    assert schemas["MessageIn"]["additionalProperties"] is False
    assert schemas["BulkIn"]["additionalProperties"] is False


def test_a_received_at_in_the_future_is_a_400_naming_the_field(api):
    # the monitoring charts group by received_at: 2999 stretched them to the year 3000
    payload = {"external_id": "x-fut", "body": "Hello", "received_at": "2999-01-01T00:00:00Z"}

    response = api.post(URL, payload, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "in the future" in error["message"]
    assert list(error["details"]) == ["received_at"]
    assert Message.objects.count() == 0


def test_a_received_at_a_little_ahead_of_the_servers_clock_is_accepted(api, settings):
    # the sender's clock may run ahead of ours by up to RECEIVED_AT_MAX_SKEW_SECONDS
    settings.RECEIVED_AT_MAX_SKEW_SECONDS = 3600
    ahead = timezone.now() + timedelta(minutes=30)

    response = api.post(URL, {**good(), "received_at": ahead.isoformat()}, format="json")

    assert response.status_code == 202
    assert Message.objects.get().received_at == ahead


def test_the_allowed_clock_skew_is_a_setting(api, settings):
    settings.RECEIVED_AT_MAX_SKEW_SECONDS = 0
    ahead = timezone.now() + timedelta(minutes=1)

    response = api.post(URL, {**good(), "received_at": ahead.isoformat()}, format="json")

    assert response.status_code == 400 and "0 seconds" in response.json()["error"]["message"]


def test_a_received_at_in_the_past_is_kept_however_old(api):
    response = api.post(URL, {**good(), "received_at": "1995-03-04T09:30:00+02:00"}, format="json")

    assert response.status_code == 202
    assert Message.objects.get().received_at == datetime(1995, 3, 4, 7, 30, tzinfo=UTC)


def test_a_received_at_without_an_offset_is_read_as_utc(api):
    response = api.post(URL, {**good(), "received_at": "2020-01-01T12:00:00"}, format="json")

    assert response.status_code == 202
    assert Message.objects.get().received_at == datetime(2020, 1, 1, 12, 0, tzinfo=UTC)


def test_a_bulk_item_received_in_the_future_refuses_the_request_with_its_index(api):
    items = [good("b-1"), {**good("b-2"), "received_at": "2999-01-01T00:00:00Z"}]

    response = api.post(BULK_URL, {"messages": items}, format="json")

    assert response.status_code == 400
    (detail,) = response.json()["error"]["details"]
    assert (detail["index"], detail["code"], detail["field"]) == (1, "invalid", "received_at")
    assert "in the future" in detail["message"]
    assert Message.objects.count() == 0


def test_the_schema_states_the_scorers_rule_for_a_body(api):
    from scoring.text import content_pattern

    schema = api.get("/api/schema/?format=json").json()

    body = schema["components"]["schemas"]["MessageIn"]["properties"]["body"]
    assert body["pattern"] == content_pattern()
    assert "empty_body" in body["description"] and "zero-width space" in body["description"]


def test_bulk_ingest_flags_a_conflicting_duplicate_inside_one_request(api):
    items = [good("c-1"), good("c-1", body="A different body.")]

    body = api.post(BULK_URL, {"messages": items}, format="json").json()

    assert [r["result"] for r in body["results"]] == ["created", "error"]
    assert body["results"][1]["error"]["code"] == "conflict"
    assert Message.objects.count() == 1


def test_a_compliance_admin_may_ingest_too(admin_user):
    client = APIClient()
    client.force_authenticate(admin_user)

    assert client.post(URL, good(), format="json").status_code == 202


# --- bad input: a specific 4xx, a JSON error, nothing written ----------------------------


def j(**fields) -> str:
    return json.dumps(fields)


BAD_SINGLE = [
    ("invalid JSON", b'{"external_id": "x", "body": ', 400, "invalid_json"),
    ("JSON with NaN", b'{"external_id": "x", "body": NaN}', 400, "invalid_json"),
    (
        "non-UTF-8 bytes",
        j(external_id="x", body="caf\u00e9").encode().replace(b"\\u00e9", b"\xe9"),
        400,
        "invalid_encoding",
    ),
    ("a JSON list instead of an object", b"[1, 2]", 400, "invalid"),
    ("missing body", json.dumps({"external_id": "x"}), 400, "invalid"),
    ("missing external_id", json.dumps({"body": "hello"}), 400, "invalid"),
    ("empty body text", json.dumps({"external_id": "x", "body": ""}), 400, "empty_body"),
    ("whitespace-only body", json.dumps({"external_id": "x", "body": " \n\t "}), 400, "empty_body"),
    # texts the scorer refuses (scoring.text.has_content): refused here, not failed seconds later
    ("zero-width spaces only", j(external_id="x", body="\u200b\u200b\u200b"), 400, "empty_body"),
    ("BEL characters only", j(external_id="x", body="\u0007\u0007"), 400, "empty_body"),
    ("a soft hyphen only", j(external_id="x", body="\u00ad"), 400, "empty_body"),
    ("combining marks only", j(external_id="x", body="\u0301\u0301"), 400, "empty_body"),
    ("replacement characters only", j(external_id="x", body="\ufffd\ufffd"), 400, "empty_body"),
    ("body is a number", json.dumps({"external_id": "x", "body": 42}), 400, "invalid"),
    ("body is a list", json.dumps({"external_id": "x", "body": ["a"]}), 400, "invalid"),
    ("external_id is a number", json.dumps({"external_id": 7, "body": "hello"}), 400, "invalid"),
    ("external_id too long", json.dumps({"external_id": "x" * 201, "body": "hello"}), 400, "invalid"),
    ("unknown channel", json.dumps({"external_id": "x", "body": "hi", "channel": "fax"}), 400, "invalid"),
    ("received_at not a date", j(external_id="x", body="hi", received_at="soon"), 400, "invalid"),
    ("NUL character in body", json.dumps({"external_id": "x", "body": "a\u0000b"}), 400, "invalid"),
    ("body over 100,000 characters", j(external_id="x", body="a" * 100_001), 413, "too_large"),
]


@pytest.mark.parametrize(("case", "raw", "status", "code"), BAD_SINGLE, ids=[c[0] for c in BAD_SINGLE])
def test_bad_single_input_gets_a_specific_error_and_writes_nothing(api, case, raw, status, code):
    response = post_raw(api, URL, raw)

    assert response.status_code == status, response.content
    assert error_code(response) == code
    assert response.json()["error"]["message"]
    assert Message.objects.count() == 0


@pytest.mark.parametrize("url", [URL, BULK_URL])
@pytest.mark.parametrize(
    "raw",
    ["[" * 100_000 + "]" * 100_000, '{"a": ' * 100_000 + "1" + "}" * 100_000],
    ids=["arrays", "objects"],
)
def test_json_nested_deeper_than_the_parser_can_go_is_invalid_json_not_a_server_error(api, url, raw):
    response = post_raw(api, url, raw)

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert error_code(response) == "invalid_json"
    assert "nested too deep" in response.json()["error"]["message"]
    assert Message.objects.count() == 0


@pytest.mark.parametrize("url", [URL, BULK_URL])
@pytest.mark.parametrize(
    "request_body",
    [
        # what curl -d '' sends: Content-Length "0" (the test client leaves it out for no data)
        {"CONTENT_LENGTH": "0", "CONTENT_TYPE": "application/json"},
        {"CONTENT_TYPE": "application/json"},  # no Content-Length at all
        {},  # no Content-Type either (a bare POST)
        {"data": b" \r\n\t "},  # whitespace only
    ],
    ids=["content-length-0", "no-content-length", "no-content-type", "whitespace"],
)
def test_an_empty_request_body_is_refused_as_empty_body(api, url, request_body):
    extra = dict(request_body)
    data = extra.pop("data", b"")

    response = api.generic("POST", url, data=data, content_type="application/json", **extra)

    assert response.status_code == 400
    assert error_code(response) == "empty_body"
    assert Message.objects.count() == 0


def test_a_form_encoded_request_is_415(api):
    response = post_raw(api, URL, "external_id=x&body=y", content_type="application/x-www-form-urlencoded")

    assert response.status_code == 415
    assert error_code(response) == "unsupported_media_type"
    assert Message.objects.count() == 0


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2_000)
def test_a_request_body_over_the_byte_limit_is_413(api):
    response = post_raw(api, BULK_URL, json.dumps({"messages": [good(f"x{i}") for i in range(100)]}))

    assert response.status_code == 413
    assert error_code(response) == "too_large"
    assert Message.objects.count() == 0


@override_settings(BULK_MAX_ITEMS=3)
def test_a_bulk_list_that_is_too_long_is_413_and_writes_nothing(api):
    response = api.post(BULK_URL, {"messages": [good(f"x{i}") for i in range(4)]}, format="json")

    assert response.status_code == 413
    assert "limit is 3" in response.json()["error"]["message"]
    assert Message.objects.count() == 0


@pytest.mark.parametrize(
    ("payload", "code"),
    [({"messages": []}, "empty_list"), ({"messages": "nope"}, "invalid"), ({"items": [good()]}, "invalid")],
)
def test_a_malformed_bulk_request_is_refused(api, payload, code):
    response = api.post(BULK_URL, payload, format="json")

    assert response.status_code == 400
    assert error_code(response) == code
    assert Message.objects.count() == 0


def test_a_bulk_request_where_every_item_conflicts_is_a_409_and_stores_nothing(api):
    api.post(URL, good("c-9"), format="json")

    response = api.post(BULK_URL, {"messages": [good("c-9", body="Another body.")]}, format="json")

    assert response.status_code == 409
    assert error_code(response) == "conflict"
    assert [r["result"] for r in response.json()["error"]["details"]] == ["error"]
    assert Message.objects.count() == 1


def test_an_unknown_message_id_is_404(api):
    response = api.get("/api/messages/999999/status/")

    assert response.status_code == 404
    assert error_code(response) == "not_found"


@pytest.mark.parametrize("method", ["get", "post", "put", "delete"])
def test_an_address_that_names_no_endpoint_is_the_apis_json_404_for_every_method(service_account, method):
    # a feed posting to a mistyped address with its token (no session, no CSRF cookie): the
    # answer is the API's JSON 404, not the site's HTML "CSRF verification failed" page
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(user=service_account).token}")

    response = getattr(client, method)("/api/messages/email/", good(), format="json")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert error_code(response) == "not_found"
    assert Message.objects.count() == 0


# --- who may ingest ------------------------------------------------------------------------


def test_no_credentials_is_refused_and_writes_nothing():
    response = APIClient().post(URL, good(), format="json")

    assert response.status_code in (401, 403)
    assert error_code(response) == "not_authenticated"
    assert Message.objects.count() == 0


def test_a_wrong_token_is_refused():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    response = client.post(URL, good(), format="json")

    assert response.status_code == 401
    assert Message.objects.count() == 0


@pytest.mark.parametrize("persona", ["reviewer", "auditor", "outsider"])
def test_reviewers_auditors_and_outsiders_cannot_ingest(request, persona):
    client = APIClient()
    client.force_authenticate(request.getfixturevalue(persona))

    single = client.post(URL, good(), format="json")
    bulk = client.post(BULK_URL, {"messages": [good()]}, format="json")

    assert single.status_code == bulk.status_code == 403
    assert Message.objects.count() == 0


PERSONAS = ["service_account", "reviewer", "auditor", "admin_user", "outsider"]


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
@pytest.mark.parametrize("persona", PERSONAS)
def test_a_method_the_messages_endpoint_does_not_have_is_405_for_every_role(request, persona, method):
    # an ingest token's PUT was a 403 saying it may not read messages: the role check ran first
    client = APIClient()
    client.force_authenticate(request.getfixturevalue(persona))

    response = getattr(client, method)(URL, good(), format="json")

    assert response.status_code == 405
    assert error_code(response) == "method_not_allowed"
    assert method.upper() in response.json()["error"]["message"]
    assert set(response["Allow"].split(", ")) == {"GET", "POST", "HEAD", "OPTIONS"}
    assert Message.objects.count() == 0


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        (BULK_URL, {"POST", "OPTIONS"}),
        ("/api/messages/raw/", {"POST", "OPTIONS"}),
        ("/api/messages/status/", {"GET", "HEAD", "OPTIONS"}),
    ],
)
@pytest.mark.parametrize("persona", PERSONAS)
def test_a_method_another_ingest_endpoint_does_not_have_is_405_for_every_role(request, persona, url, allowed):
    client = APIClient()
    client.force_authenticate(request.getfixturevalue(persona))

    response = client.put(url, good(), format="json")

    assert response.status_code == 405
    assert error_code(response) == "method_not_allowed"
    assert set(response["Allow"].split(", ")) == allowed


def test_a_method_no_endpoint_has_still_needs_credentials():
    response = APIClient().put(URL, good(), format="json")

    assert response.status_code == 401
    assert error_code(response) == "not_authenticated"


def test_reading_the_message_list_keeps_its_roles(api, reviewer):
    reader = APIClient()
    reader.force_authenticate(reviewer)

    assert api.get(URL).status_code == 403
    assert error_code(api.get(URL)) == "permission_denied"
    assert reader.get(URL).status_code == 200


@pytest.mark.parametrize(
    "query", ["since=2026-01-01", "recieved_after=2026-01-01T00:00:00Z", "status=received&limit=5"]
)
def test_a_query_parameter_the_status_list_does_not_read_is_a_400_naming_it(api, query):
    # a misspelt or invented filter would otherwise be ignored: every message, read as filtered
    response = api.get(f"/api/messages/status/?{query}")

    assert response.status_code == 400
    assert error_code(response) == "invalid"
    unknown = [part.split("=")[0] for part in query.split("&") if part.split("=")[0] != "status"]
    assert set(response.json()["error"]["details"]) == set(unknown)
    message = response.json()["error"]["message"]
    assert "received_after" in message and "page_size" in message and "cursor" in message


def test_the_parameters_the_status_list_reads_are_accepted(api):
    response = api.get(
        "/api/messages/status/?status=received&received_after=2026-01-01T00:00:00Z&page_size=5"
    )

    assert response.status_code == 200


def test_a_nul_character_in_a_text_filter_is_a_400_as_the_schema_says(api):
    from compliance_site.api_schema import NO_NUL

    response = api.get("/api/messages/status/?external_id=a%00b")

    assert response.status_code == 400
    assert error_code(response) == "invalid" and "external_id" in response.json()["error"]["details"]
    schema = api.get("/api/schema/?format=json").json()
    parameters = {
        p["name"]: p["schema"] for p in schema["paths"]["/api/messages/status/"]["get"]["parameters"]
    }
    assert parameters["external_id"]["pattern"] == NO_NUL
