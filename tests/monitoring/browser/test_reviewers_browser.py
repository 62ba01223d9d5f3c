"""The Reviewers page in Chromium: the kappa chart is drawn under the strict CSP with no console
error, and the table gives every figure with its size."""

from __future__ import annotations

import pytest

from core.roles import Role
from tests.factories import UserFactory
from tests.monitoring.test_reviewers_page import decide, pair
from tests.reviews.browser.conftest import screenshot, sign_in

pytestmark = [pytest.mark.browser]


def test_an_admin_sees_kappa_over_time_and_the_table_per_reviewer(new_page, settings):
    settings.DOUBLE_REVIEW_RATE = 1.0
    rita = UserFactory(username="rita_reviewer", role=Role.REVIEWER)
    rob = UserFactory(username="rob_reviewer", role=Role.REVIEWER)
    admin = UserFactory(username="carl_admin", role=Role.COMPLIANCE_ADMIN)
    pair(rita, rob, "guaranteed_returns", "guaranteed_returns")
    pair(rita, rob, "no_claim", "no_claim")
    decide(pair(rita, rob, "guaranteed_returns", "no_claim"), admin, "guaranteed_returns")
    page = new_page()
    sign_in(page, "carl_admin")

    # plotly.js (3.5 MB) comes from the live server and runs before DOMContentLoaded: on a busy
    # machine that took 40 s here, so this navigation gets a minute
    page.goto("/monitoring/reviewers/?days=30&period=day", wait_until="domcontentloaded", timeout=60_000)

    page.wait_for_selector("#chart-kappa .main-svg", timeout=60_000)
    row = page.inner_text('#reviewers-table tr[data-reviewer="rita_reviewer"][data-claim-type="all"]')
    assert "2 of 3: 67 %" in row and "n = 3, n too small" in row and "1 of 1" in row
    assert "n too small" in page.inner_text("#summary-kappa")
    screenshot(page, "reviewers")
    # no Content-Security-Policy violation at all, plotly.js's included, and no console error
    assert page.csp_violations == [] and page.console_errors == [], (page.csp_violations, page.console_errors)
