"""The monitoring page in Chromium: every chart is drawn from its endpoint under the strict CSP,
with no console error, the data tables are filled, and the alert is listed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.roles import Role
from monitoring.api_urls import ENDPOINTS
from tests.factories import MessageFactory, UserFactory
from tests.monitoring.conftest import day_at, decide, explained, routed
from tests.reviews.browser.conftest import screenshot, sign_in

pytestmark = [pytest.mark.browser]

CHARTS = (
    "chart-disagreement",
    "chart-quality",
    "chart-confusion",
    "chart-scores",
    "chart-rules",
    "chart-explanations",
    "chart-queue",
    "chart-queue-states",
)


@pytest.fixture
def monitored(settings, committed_decisions):
    """Two weeks of one model version: a quiet first week, then misses of risk_free claims."""
    from django.utils import timezone

    from tests.factories import ModelVersionFactory

    settings.MONITORING_REFERENCE_DAYS = 3
    settings.MONITORING_REFERENCE_MIN_REVIEWED = 10
    version = ModelVersionFactory(threshold=0.5, is_active=True)
    today = timezone.now().date()
    first = today - timedelta(days=today.weekday()) - timedelta(weeks=2)
    reviewer = UserFactory(username="browser_reviewer", role=Role.REVIEWER)
    UserFactory(username="carl_admin", role=Role.COMPLIANCE_ADMIN)
    for offset in range(10):
        day = first + timedelta(days=offset)
        for i in range(6):
            drifted = offset >= 6 and i < 3
            message = routed(
                version,
                received_at=day_at(day, 8, i),
                score=0.1 if drifted else 0.9,
                claim_code="risk_free",
                rule_code="risk_free" if i == 5 else None,
            )
            if not drifted:
                explained(message, passed=i != 4)
            decide(message, verdict="claim", claim_code="risk_free", at=day_at(day, 12, i), reviewer=reviewer)
    return version


def test_an_admin_sees_every_chart_drawn_with_its_table_and_the_alert(new_page, monitored):
    MessageFactory(status="failed", failed_at=timezone.now(), status_reason="crashed its worker alone")
    page = new_page()
    sign_in(page, "carl_admin")

    page.goto("/monitoring/?period=day")

    for chart in CHARTS:
        page.wait_for_selector(f"#{chart} .main-svg", timeout=20_000)
    page.wait_for_selector("#table-disagreement table", state="attached")
    alerts = page.inner_text("#alert-list")
    assert "risk" in alerts.lower() and "disagreement" in alerts
    assert "ALERT" in page.text_content("#table-disagreement")
    assert page.inner_text("#summary-quality").startswith("Precision")
    assert page.inner_text("#monitoring-status") == ""
    assert page.inner_text("#summary-queue-failed").startswith("1 failed for good")
    screenshot(page, "monitoring-dashboard")
    # no Content-Security-Policy violation at all, plotly.js's included, and no console error
    assert page.csp_violations == [] and page.console_errors == [], (page.csp_violations, page.console_errors)
    assert len(ENDPOINTS) == 9
