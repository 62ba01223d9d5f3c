"""The monitoring page: compliance admins only, alerts listed by the server, charts configured
for the period and model version chosen, and the navigation link."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse

from core.roles import Role
from tests.factories import UserFactory, claim_type
from tests.monitoring.conftest import day_at, decide, routed, signed_in

pytestmark = pytest.mark.django_db


def config_of(response) -> dict:
    html = response.content.decode()
    start = html.index('id="monitoring-config"')
    block = html[html.index(">", start) + 1 : html.index("</script>", start)]
    return json.loads(block)


def test_the_page_lists_alerts_and_configures_every_chart(admin_client_, version, base_day, settings):
    settings.MONITORING_REFERENCE_DAYS = 1
    settings.MONITORING_REFERENCE_MIN_REVIEWED = 20
    for day, wrong in ((base_day, 0), (base_day + timedelta(days=1), 8)):
        for i in range(20 if wrong == 0 else 10):
            message = routed(version, received_at=day_at(day, 8, i), score=0.9, claim_code="risk_free")
            verdict = "no_claim" if i < wrong else "claim"
            decide(
                message, verdict=verdict, claim_code=None if i < wrong else "risk_free", at=day_at(day, 12, i)
            )

    response = admin_client_.get(
        reverse("monitoring:dashboard"), {"period": "day", "model_version": version.pk}
    )

    assert response.status_code == 200
    html = response.content.decode()
    alerts = html.split('id="h-alerts"')[1].split("</section>")[0]
    assert "8 of 10" in alerts and "0 of 20" in alerts
    assert claim_type("risk_free").name in alerts
    config = config_of(response)
    assert config["period"] == "day" and config["model_version"] == version.pk
    assert set(config["endpoints"]) >= {"metrics-disagreement", "metrics-quality", "metrics-queue"}
    assert 'src="/static/js/monitoring.js"' in html
    for chart in ("chart-disagreement", "chart-quality", "chart-length", "chart-scores", "chart-rules"):
        assert f'id="{chart}"' in html


def test_a_bad_filter_is_refused_with_the_reason(admin_client_):
    response = admin_client_.get(reverse("monitoring:dashboard"), {"period": "month"})
    assert response.status_code == 400
    assert "month" in response.content.decode()


def test_only_compliance_admins_see_the_page_and_its_link(admin_client_, client):
    assert 'href="/monitoring/"' in admin_client_.get(reverse("home")).content.decode()
    for role in (Role.REVIEWER, Role.AUDITOR, None):
        user = UserFactory(username=f"page_{role or 'none'}", role=role)
        other = signed_in(user)
        assert other.get(reverse("monitoring:dashboard")).status_code == 403
        assert 'href="/monitoring/"' not in other.get(reverse("home")).content.decode()
    assert client.get(reverse("monitoring:dashboard")).status_code == 302
    assert admin_client_.post(reverse("monitoring:dashboard")).status_code == 405
