"""Template source that Django would print instead of reading: a `{# ... #}` comment ends with its
line (the template language's single-line comment), so one spread over lines reaches the page as
text, as the message page's part comment once did for reviewers and auditors. Longer notes use
`{% comment %}`. And a table outside a box that scrolls on its own: on a phone it pushes the whole
page sideways."""

from __future__ import annotations

import re
from pathlib import Path

from django.template.loader import render_to_string

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted((ROOT / "templates").rglob("*.html"))


def unclosed_comment_lines(source: str) -> list[int]:
    """Line numbers (1-based) where a `{#` opens and its line does not close it."""
    found = []
    for number, line in enumerate(source.splitlines(), start=1):
        for match in re.finditer(r"\{#", line):
            if "#}" not in line[match.end() :]:
                found.append(number)
                break
    return found


def test_the_checker_finds_a_comment_spread_over_lines():
    assert unclosed_comment_lines("{# one line #}\n<p>{{ x }}</p>") == []
    assert unclosed_comment_lines("<p>\n{# starts here\nends here #}\n</p>") == [2]


def test_no_template_spreads_a_single_line_comment_over_lines():
    assert TEMPLATES
    found = {str(p.relative_to(ROOT)): unclosed_comment_lines(p.read_text()) for p in TEMPLATES}
    assert {path: lines for path, lines in found.items() if lines} == {}


def test_the_message_parts_template_renders_no_comment_text():
    html = render_to_string("reviews/_message_parts.html", {"parts": []})
    assert "{#" not in html and "#}" not in html
    assert "A message body by part" not in html


def tables_outside_a_scroll_box(source: str) -> int:
    """How many `<table>`s do not open right inside a `<div class="table-scroll">`."""
    tight = re.sub(r"\s+<table", "<table", source)
    return len(re.findall(r'(?<!<div class="table-scroll">)<table\b', tight))


def test_the_table_checker_finds_a_table_outside_a_scroll_box():
    assert tables_outside_a_scroll_box('<div class="table-scroll">\n  <table>') == 0
    assert tables_outside_a_scroll_box("<details><table>") == 1


def test_every_table_scrolls_on_its_own_so_that_the_page_does_not_scroll_sideways():
    # a table is as wide as its longest unbreakable cells: on a phone (390 px) most of the app's
    # tables are wider than the window; the admin's templates use the admin's own stylesheet
    ours = [p for p in TEMPLATES if p.relative_to(ROOT / "templates").parts[0] != "admin"]
    assert ours
    found = {str(p.relative_to(ROOT)): tables_outside_a_scroll_box(p.read_text()) for p in ours}
    assert {path: count for path, count in found.items() if count} == {}
