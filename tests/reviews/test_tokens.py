"""API tokens: stored as a digest only, expiring, revocable, issued once; and the API's rate
limits for ingest and reads (scoped, per account, rates from the settings)."""

from __future__ import annotations

import importlib
import io
from datetime import timedelta

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from core.roles import Role
from reviews.tokens import api_token_issue
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def with_token(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def status_of(token: str) -> int:
    return with_token(token).get("/api/messages/status/").status_code


def command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_the_database_holds_a_digest_of_a_token_never_the_token(service_account):
    issued = api_token_issue(user=service_account)

    stored = AuthToken.objects.get(user=service_account)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {AuthToken._meta.db_table}")  # noqa: S608
        rows = cursor.fetchall()
    assert not any(issued.token in str(value) for row in rows for value in row)
    assert stored.digest != issued.token and status_of(issued.token) == 200


def test_a_token_expires_after_the_configured_days(service_account, settings):
    issued = api_token_issue(user=service_account)
    stored = AuthToken.objects.get(user=service_account)
    assert stored.expiry - stored.created == pytest.approx(
        timedelta(days=settings.API_TOKEN_TTL_DAYS), abs=timedelta(seconds=5)
    )

    AuthToken.objects.filter(pk=stored.pk).update(expiry=timezone.now() - timedelta(seconds=1))

    response = with_token(issued.token).get("/api/messages/status/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_revoke_token_ends_one_token_at_once_and_the_others_keep_working(service_account):
    old = api_token_issue(user=service_account)
    new = api_token_issue(user=service_account)

    out = command("revoke_token", service_account.username, "--key", old.token_key)

    assert "Revoked 1 token(s)" in out
    assert status_of(old.token) == 401 and status_of(new.token) == 200
    command("revoke_token", service_account.username, "--all")
    assert status_of(new.token) == 401


def test_revoke_token_lists_tokens_without_revoking_and_refuses_an_unknown_key(service_account):
    issued = api_token_issue(user=service_account)

    listing = command("revoke_token", service_account.username)
    with pytest.raises(CommandError, match="no token 'nope'; nothing was revoked"):
        command("revoke_token", service_account.username, "--key", "nope")

    assert issued.token_key in listing and issued.token not in listing
    assert status_of(issued.token) == 200


def test_issue_token_gives_a_service_a_new_working_token_and_refuses_people(service_account, reviewer):
    out = command("issue_token", service_account.username)
    token = out.split("API token (shown once, keep it secret): ")[1].split()[0]

    assert status_of(token) == 200
    with pytest.raises(CommandError, match="not an ingest_service account"):
        command("issue_token", reviewer.username)
    assert not AuthToken.objects.filter(user=reviewer).exists()


class SqlRunner:
    """What the migration uses of a schema editor (SQLite's cannot open inside a test's transaction)."""

    connection = connection

    def execute(self, sql: str, params=()) -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


def test_the_migration_hashes_the_tokens_stored_in_clear_and_drops_their_table(service_account):
    migration = importlib.import_module("reviews.migrations.0005_hashed_api_tokens")
    clear_key = "0123456789abcdef0123456789abcdef01234567"  # a DRF authtoken key: 40 hex characters
    with connection.cursor() as cursor:  # DRF's table as a database that used authtoken has it
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, user_id integer)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s)", [clear_key, service_account.pk])

    migration.hash_clear_tokens(apps, SqlRunner())

    assert "authtoken_token" not in connection.introspection.table_names()
    assert clear_key not in str(list(AuthToken.objects.values_list("digest", "token_key")))
    assert status_of(clear_key) == 200  # the service's existing token still works, for a while
    assert AuthToken.objects.get(user=service_account).expiry > timezone.now()


# --- throttling ------------------------------------------------------------------------------


def test_ingest_is_throttled_per_account_with_a_retry_after_and_the_error_body(settings, service_account):
    settings.API_THROTTLE_INGEST = "2/minute"
    api = with_token(api_token_issue(user=service_account).token)
    other = with_token(api_token_issue(user=UserFactory(username="feed_b", role=Role.INGEST_SERVICE)).token)

    codes = [
        api.post(
            "/api/messages/", {"external_id": f"t-{i}", "body": "Hello there."}, format="json"
        ).status_code
        for i in range(3)
    ]
    refused = api.post("/api/messages/", {"external_id": "t-9", "body": "Hello."}, format="json")

    assert codes == [202, 202, 429]
    assert refused.json()["error"]["code"] == "throttled" and int(refused["Retry-After"]) > 0
    assert (
        other.post("/api/messages/", {"external_id": "t-1", "body": "Hi."}, format="json").status_code == 202
    )
    assert api.get("/api/messages/status/").status_code == 200  # reads have a rate of their own


def test_reads_are_throttled_at_their_own_rate(settings, auditor):
    settings.API_THROTTLE_READ = "3/minute"
    api = APIClient()
    api.force_authenticate(auditor)

    assert [api.get("/api/messages/").status_code for _ in range(4)] == [200, 200, 200, 429]
