"""One Chromium for the whole test run (Playwright's sync API driving Debian's Chromium).

`browser` is session-scoped: launched by the first test that needs it, closed at the end of the
run; each test opens its own contexts (separate cookies and storage) and closes them. The browser
is skipped when chromium is missing, unless CLAIMWATCH_REQUIRE_BROWSER=1 (CI), in which case the
tests fail.

While Playwright runs, its event loop is the running loop of the test thread, so Django's
async-safety check is switched off (DJANGO_ALLOW_ASYNC_UNSAFE) for as long as the browser lives.
That is why tests/conftest.py runs the `browser` tests last: no other test runs with the check
off."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
from django.db import connections
from django.urls import get_resolver

from tests.conftest import require_or_skip

# The serialized copy of the migrated rows (serialized rollback), for the connection objects
# Django hands out inside Playwright's greenlet (tests/reviews/browser/conftest.py: new_page).
SERIALIZED: dict[str, str | None] = {}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
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
    # The browser is launched in the setup of its first test, before that test's database restore
    # (a session fixture comes first), so the restore already needs them: they are given them here,
    # once Playwright runs (new_page keeps doing it per test).
    for alias in connections:
        SERIALIZED[alias] = getattr(connections[alias], "_test_serialized_contents", None)
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            for alias, contents in SERIALIZED.items():
                if contents is not None and not hasattr(connections[alias], "_test_serialized_contents"):
                    connections[alias]._test_serialized_contents = contents
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous
