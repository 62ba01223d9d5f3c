"""Pages of the session's one Chromium (tests/support/browser.py: `browser`) against
pytest-django's live server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection

from tests.conftest import PASSWORD
from tests.support.browser import SERIALIZED

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
CSP_MARK = "CSP-VIOLATION "
# Injected by Playwright before any page script: report each Content-Security-Policy violation
# with its directive and source file, so a test can tell the product's own code from a library's.
REPORT_CSP_VIOLATIONS = (
    "document.addEventListener('securitypolicyviolation', function (e) {"
    f" console.error('{CSP_MARK}' + JSON.stringify({{directive: e.violatedDirective,"
    " source: e.sourceFile || '',"
    " element: e.target && e.target.outerHTML ? e.target.outerHTML.slice(0, 120) : ''}));"
    "});"
)


@pytest.fixture
def new_page(browser, live_server, committed_decisions):
    """Pages in fresh browser contexts (separate cookies), closed after the test; every page
    records console errors and dialogs so a test can assert that nothing ran."""
    if SERIALIZED.get("default") is not None and not hasattr(connection, "_test_serialized_contents"):
        connection._test_serialized_contents = SERIALIZED["default"]
    contexts = []

    def make():
        context = browser.new_context(base_url=live_server.url, accept_downloads=True)
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.add_init_script(REPORT_CSP_VIOLATIONS)
        page.console_errors = []
        page.csp_violations = []
        page.dialogs = []

        def on_console(msg):
            if msg.type != "error":
                return
            if msg.text.startswith(CSP_MARK):
                page.csp_violations.append(json.loads(msg.text[len(CSP_MARK) :]))
            else:
                page.console_errors.append(msg.text)

        page.on("console", on_console)

        def on_dialog(dialog):
            page.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)
        return page

    yield make
    for context in contexts:
        context.close()


def sign_in(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/")


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
