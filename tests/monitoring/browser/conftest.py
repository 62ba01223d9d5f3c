"""The browser fixtures of the review tests (Playwright + Debian's Chromium), reused."""

from tests.reviews.browser.conftest import new_page  # noqa: F401
from tests.reviews.conftest import committed_decisions  # noqa: F401
