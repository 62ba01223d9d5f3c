"""The heat-maps of the "How attention works" page draw in a real browser under the CSP."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

PLOTLY_JS = Path(__import__("plotly").__file__).parent / "package_data" / "plotly.min.js"
PLOTLY_CSS = django_settings.BASE_DIR / "static" / "plotly" / "plotly-global.css"


@pytest.fixture
def browser_context(browser):
    """A fresh context (its own cookies) of the session's one Chromium (tests/support/browser.py)."""
    context = browser.new_context()
    yield context
    context.close()


def test_the_heat_maps_render_with_plotly_styles_under_the_csp(live_server, browser_context, reviewer):
    # given a signed-in reviewer's session in the browser
    client = Client()
    client.force_login(reviewer)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME]
    browser_context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": live_server.url}])
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    # when
    page.goto(f"{live_server.url}/explanations/how-attention-works/")
    # then both heat-maps are drawn with plotly's own layout rules and crisp cells
    for chart in ("#attention-demo-full", "#attention-demo-masked"):
        page.wait_for_selector(f"{chart} .main-svg", state="attached", timeout=15_000)
        assert page.locator(f"{chart} .hm").count() == 1
        assert (
            page.eval_on_selector(f"{chart} .main-svg", "el => getComputedStyle(el).position") == "absolute"
        )
        image = f"{chart} .heatmaplayer image"
        assert page.eval_on_selector(image, "el => getComputedStyle(el).imageRendering") == "pixelated"
    # and plotly injected no <style> element (its CSS comes from static files), and the CSP
    # refused nothing: no console error at all
    plotly_styles = page.evaluate(
        "Array.from(document.querySelectorAll('style'))"
        ".filter(s => s.id.startsWith('plotly') || s.id.length == 64).length"
    )
    assert plotly_styles == 0
    assert page.locator(".hm").count() == 2
    # (the browser's own favicon request reports a console 404 without a page response event;
    # every resource the page asks for is checked through the response events above)
    unexpected = [e for e in errors if not e.startswith("Failed to load")]
    assert unexpected == [], unexpected


def test_the_static_plotly_css_is_what_this_plotly_version_would_inject(browser_context):
    # A plotly upgrade that changes its injected rules must regenerate static/plotly/plotly-global.css.
    page = browser_context.new_page()
    page.set_content("<html><head></head><body><div id='chart'></div></body></html>")
    page.add_script_tag(path=str(PLOTLY_JS))
    page.evaluate("Plotly.newPlot('chart', [{type: 'heatmap', z: [[1, 2], [3, 4]]}])")
    injected = page.evaluate(
        "Array.from(document.getElementById('plotly.js-style-global').sheet.cssRules).map(r => r.cssText)"
    )
    served = PLOTLY_CSS.read_text().split("*/\n", 1)[1].splitlines()
    assert served == injected
    # and the map-trace CSS it would inject carries the id plotly_head.html pre-empts
    style_ids = page.evaluate("Array.from(document.querySelectorAll('style')).map(s => s.id)")
    head = (django_settings.BASE_DIR / "templates" / "includes" / "plotly_head.html").read_text()
    assert [i for i in style_ids if i != "plotly.js-style-global" and i not in head] == []
