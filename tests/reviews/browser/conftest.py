"""Playwright (sync API) driving Debian's Chromium against pytest-django's live server.

The browser is skipped when chromium is missing, unless CLAIMWATCH_REQUIRE_BROWSER=1 (CI), in
which case the tests fail. Playwright's sync API runs an event loop in the test thread, so
Django's async-safety check is switched off (DJANGO_ALLOW_ASYNC_UNSAFE) only while it runs."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection, connections
from django.urls import get_resolver

from tests.conftest import PASSWORD, require_or_skip

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
_SERIALIZED: dict[str, str | None] = {}
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
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    executable = shutil.which("chromium")
    require_or_skip(executable is not None, "Chromium", "CLAIMWATCH_REQUIRE_BROWSER")
    from playwright.sync_api import sync_playwright

    # Import the URLconf (explanations' views import torch) before the first navigation: on a busy
    # 2-core machine that import alone took 20-40 s, beyond a page's 15 s timeout.
    get_resolver().url_patterns  # noqa: B018

    # Inside Playwright's greenlet Django hands out other connection objects (its connection
    # handler is context-local); they need the serialized copy of the migrated rows too, or the
    # flush after each test re-creates content types that the next restore then collides with.
    _SERIALIZED["default"] = getattr(connections["default"], "_test_serialized_contents", None)
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def new_page(browser, live_server, committed_decisions):
    """Pages in fresh browser contexts (separate cookies), closed after the test; every page
    records console errors and dialogs so a test can assert that nothing ran."""
    if _SERIALIZED.get("default") is not None and not hasattr(connection, "_test_serialized_contents"):
        connection._test_serialized_contents = _SERIALIZED["default"]
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
