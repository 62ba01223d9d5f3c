"""The /api/metrics/ endpoints: who may call them, what they refuse, and that their number of
queries does not grow with the data."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from core.roles import Role
from monitoring.api_urls import ENDPOINTS
from tests.factories import UserFactory
from tests.monitoring.conftest import day_at, decide, explained, routed, signed_in

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", list(ENDPOINTS))
def test_a_compliance_admin_reads_every_endpoint(name, admin_client_, version, base_day):
    message = routed(version, received_at=day_at(base_day), score=0.9)
    decide(message, verdict="claim", claim_code="guaranteed_returns", at=day_at(base_day, 13))

    response = admin_client_.get(reverse(name), {"period": "week", "model_version": version.pk})

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    assert "activations" in response.json()


@pytest.mark.parametrize("name", list(ENDPOINTS))
@pytest.mark.parametrize("role", [None, Role.REVIEWER, Role.AUDITOR, Role.INGEST_SERVICE])
def test_every_other_role_is_refused(name, role):
    user = UserFactory(username=f"someone_{role or 'without_role'}", role=role)
    assert signed_in(user).get(reverse(name)).status_code == 403


@pytest.mark.parametrize("name", list(ENDPOINTS))
def test_anonymous_callers_are_refused(name, client):
    assert client.get(reverse(name)).status_code in (401, 403)


@pytest.mark.parametrize("name", list(ENDPOINTS))
def test_the_endpoints_are_read_only(name, admin_client_):
    assert admin_client_.post(reverse(name), {}, content_type="application/json").status_code == 405


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({"period": "month"}, "period"),
        ({"model_version": "abc"}, "model_version"),
        ({"model_version": "0"}, "model_version"),
        ({"period": ""}, "period"),
    ],
)
def test_bad_parameters_get_a_clear_400(query, words, admin_client_):
    response = admin_client_.get(reverse("metrics-disagreement"), query)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert words in str(error["message"]) + str(error["details"])


def test_an_unknown_model_version_is_a_404(admin_client_):
    response = admin_client_.get(reverse("metrics-disagreement"), {"model_version": "987654"})

    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "not_found" and "no model version with id 987654" in error["message"]


def test_without_a_model_version_the_endpoints_answer_empty(admin_client_):
    body = admin_client_.get(reverse("metrics-disagreement")).json()
    assert body["model_version"] is None and body["series"] == []
    assert admin_client_.get(reverse("metrics-quality")).json()["overall"] is None


def test_the_default_version_is_the_active_one(admin_client_, version):
    from scoring.models import ModelVersion

    ModelVersion.objects.filter(pk=version.pk).update(is_active=True)
    assert admin_client_.get(reverse("metrics-scores")).json()["model_version"]["id"] == version.pk


def _traffic(version, base_day, n: int) -> None:
    codes = ["guaranteed_returns", "risk_free", "performance_forecast", "regulatory_endorsement"]
    for i in range(n):
        at = day_at(base_day, 8) + timedelta(minutes=i)
        flagged = i % 3 != 2
        message = routed(
            version,
            received_at=at,
            score=0.9 if flagged else 0.1,
            claim_code=codes[i % 4],
            rule_code=codes[i % 4] if i % 2 else None,
        )
        if flagged:
            explained(message, passed=bool(i % 2))
        decide(
            message,
            verdict="claim" if i % 4 else "no_claim",
            claim_code=codes[(i + 1) % 4] if i % 4 else None,
            at=day_at(base_day, 12) + timedelta(minutes=i),
        )


def _queries(client, name: str, version) -> int:
    """Queries of a request that finds the decision roll-up up to date (the request before
    folded the new decisions in; message days changed in the last minute are recomputed by both)."""
    client.get(reverse(name), {"model_version": version.pk})
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse(name), {"model_version": version.pk})
    assert response.status_code == 200
    return len(captured.captured_queries)


@pytest.mark.parametrize("name", list(ENDPOINTS))
def test_the_number_of_queries_does_not_grow_with_the_data(name, admin_client_, version, base_day):
    _traffic(version, base_day, 3)
    admin_client_.get(reverse(name))  # sessions, roles and the first roll-up are warmed up
    few = _queries(admin_client_, name, version)
    _traffic(version, base_day + timedelta(days=1), 12)
    many = _queries(admin_client_, name, version)
    assert many == few
    assert many <= 30


def test_without_an_active_version_the_newest_that_routed_messages_is_shown(admin_client_, version, base_day):
    from tests.factories import ModelVersionFactory

    routed(version, received_at=day_at(base_day), score=0.9)
    ModelVersionFactory()  # newer, but it never routed anything
    assert admin_client_.get(reverse("metrics-scores")).json()["model_version"]["id"] == version.pk
