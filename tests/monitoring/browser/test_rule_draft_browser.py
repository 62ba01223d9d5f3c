"""Draft -> backtest -> publish in Chromium: the rule editor saves a draft, the backtest's progress
line polls (htmx) until the worker has finished, the results show the new match underlined, and
publishing makes a new active version that records its backtest."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.roles import Role
from monitoring.backtest import rule_backtest_run
from scoring.models import RuleSet, RuleSetBacktest
from scoring.selectors import clear_compiled_rules_cache
from tests.factories import ModelVersionFactory, UserFactory
from tests.monitoring.conftest import routed
from tests.reviews.browser.conftest import screenshot, sign_in

pytestmark = [pytest.mark.browser]


def test_an_admin_drafts_a_rule_backtests_it_and_publishes_it(new_page):
    admin = UserFactory(username="carl_admin", role=Role.COMPLIANCE_ADMIN)
    admin.is_staff = True
    admin.save()
    version = ModelVersionFactory(threshold=0.5, is_active=True)
    routed(
        version,
        received_at=timezone.now() - timedelta(days=2),
        score=0.1,
        route="cleared",
        body="Trust me, this coin is going to the moon.",
    )
    active = RuleSet.objects.get(is_active=True)
    page = new_page()
    errors = []  # the admin's pages included: they link an icon, so nothing asks for /favicon.ico
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    sign_in(page, "carl_admin")

    # the editor saves a draft
    page.goto(f"/admin/scoring/ruleset/{active.pk}/draft/", timeout=60_000)
    blank = int(page.input_value("#id_rules-TOTAL_FORMS")) - 2
    page.fill("#id_note", "catch moon talk")
    page.fill(f"#id_rules-{blank}-code", "PF-900")
    page.select_option(f"#id_rules-{blank}-claim_type", "performance_forecast")
    page.fill(f"#id_rules-{blank}-pattern", r"\bto\s+the\s+moon\b")
    page.click("input[type=submit][value='Save as draft']")
    page.wait_for_url("**/monitoring/rule-drafts/*/")
    assert "PF-900" in page.inner_text("#draft-changes")

    # the backtest is requested; its progress line polls until a worker has run it
    page.click("#backtest-form button[type=submit]")
    page.wait_for_selector("#backtest-progress[hx-trigger]")
    rule_backtest_run(backtest_id=RuleSetBacktest.objects.get().pk)  # what the worker does
    page.wait_for_selector("#backtest-results", timeout=30_000)
    assert page.inner_text("#backtest-sample mark.rule") == "to the moon"
    assert page.inner_text("#backtest-added td:nth-of-type(1)") == "1"
    screenshot(page, "rule-draft-backtest")

    # and published on that backtest
    page.click("#publish-form button[type=submit]")
    page.wait_for_selector("#published")
    published = RuleSet.objects.get(is_active=True)
    assert published.backtest == RuleSetBacktest.objects.get() and published.version == active.version + 1
    assert not errors and not page.csp_violations
    clear_compiled_rules_cache()
