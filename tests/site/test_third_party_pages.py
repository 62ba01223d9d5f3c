"""The pages the app serves but does not write: drf-spectacular's Swagger UI (/api/docs/) and
Django's admin, under the app's own rules. Nothing inline for the Content-Security-Policy to
block (style-src 'self'), and an icon link on every page, so that no browser asks for
/favicon.ico and logs its 404 (tests/reviews/browser/test_pages_browser.py loads both in Chromium)."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

EMPTY_ICON = '<link rel="icon" href="data:,">'


def inline_styles(html: str) -> list[str]:
    """What a `style-src 'self'` policy blocks: <style> elements and style attributes."""
    return re.findall(r"<style\b[^>]*>|\sstyle\s*=\s*[\"'][^\"']*", html, re.I)


def test_the_style_finder_finds_an_element_and_an_attribute():
    assert inline_styles('<p class="x">a</p><link rel="stylesheet" href="/s.css">') == []
    assert len(inline_styles('<style>\n html {}</style><div style="color: red">')) == 2


def test_the_api_docs_page_has_no_inline_style_and_keeps_the_sites_policy(client):
    client.force_login(UserFactory(username="docs_reader", role="reviewer"))

    response = client.get(reverse("api-docs"))

    html = response.content.decode()
    assert response.status_code == 200
    assert inline_styles(html) == []
    assert "/static/css/swagger_ui.css" in html and finders.find("css/swagger_ui.css")
    assert 'id="swagger-ui"' in html
    directives = response["Content-Security-Policy"].split(";")
    policy = dict(d.strip().split(" ", 1) for d in directives if d.strip())
    assert policy["style-src"] == "'self'" and policy["script-src"] == "'self'"


def test_the_admin_pages_link_an_icon_so_that_no_browser_asks_for_favicon_ico(client):
    assert EMPTY_ICON in client.get(reverse("admin:login")).content.decode()
    staff = UserFactory(username="staff_admin", role="compliance_admin")
    staff.is_staff = staff.is_superuser = True
    staff.save(update_fields=["is_staff", "is_superuser"])
    client.force_login(staff)

    for page in (
        reverse("admin:index"),
        reverse("admin:scoring_ruleset_changelist"),
        reverse("admin:auth_user_change", args=[staff.pk]),
    ):
        html = client.get(page).content.decode()
        assert html.count(EMPTY_ICON) == 1, page
