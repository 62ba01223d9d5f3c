"""The HTML-to-text comparison of the README, as code: its mails, its checks, and the command that
prints the table (only inscriptis is a dependency: the others are reported as not installed)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from scoring.sources.html import html_to_text
from scoring.sources.html_compare import LEAK, build_mails, compare, markdown_table, quote_outcome
from scoring.sources.mailgen import render_html

TEXT = "Dear Ann,\n\nThe fund returned 4% last year; past returns are no guarantee.\n\nBest,\nBob"
QUOTE = "Is my capital safe with this fund?\nThanks, Ann"


def test_the_mails_take_the_styles_in_turn_and_only_outlook_and_gmail_ones_quote():
    mails = build_mails([TEXT] * 9, [QUOTE], n_quoted=4)

    assert [m.style for m in mails[:3]] == ["outlook", "gmail", "newsletter"]
    assert sum(1 for m in mails if m.quoted) == 4
    assert all(m.quoted is None for m in mails if m.style == "newsletter")


def test_a_leak_is_markup_css_or_script_and_an_address_in_angle_brackets_is_not():
    assert LEAK.search('p.MsoNormal {margin:0cm; font-family:"Calibri"}')
    assert LEAK.search("<div dir=ltr>hello</div>") and LEAK.search("window.dataLayer=[];")
    assert not LEAK.search("From: Previous Sender <prev@example.com>\nSent: Monday")


@pytest.mark.parametrize("style", ["outlook", "gmail"])
def test_the_products_converter_keeps_a_quote_found_and_out_of_the_senders_text(style):
    converted = html_to_text(render_html(TEXT, style, quoted=QUOTE))

    assert quote_outcome(converted, QUOTE) == (True, True)
    # a converter that runs the quote into the sender's text is caught on both counts
    assert quote_outcome(TEXT + "\n" + QUOTE, QUOTE) == (False, False)


def test_the_comparison_has_a_row_per_library_and_measures_the_installed_ones():
    mails = build_mails([TEXT] * 6, [QUOTE], n_quoted=2)

    rows = {row["library"]: row for row in compare(mails, repeat=1)}

    assert set(rows) == {"html2text", "inscriptis", "html-text", "BeautifulSoup get_text", "selectolax"}
    inscriptis = rows["inscriptis"]
    assert inscriptis["installed"] and inscriptis["leaks"] == 0
    assert inscriptis["quoted"] == inscriptis["quoted_found"] == inscriptis["quoted_kept_out"] == 2
    table = markdown_table(list(rows.values()), n_mails=6)
    assert "| inscriptis (Apache-2.0) |" in table and "2 / 2 (of 2)" in table
    for row in rows.values():
        assert row["installed"] or f"not installed (pip install {row['package']})" in table


@pytest.mark.django_db
def test_compare_html_to_text_prints_the_table_or_json():
    out = io.StringIO()
    call_command("compare_html_to_text", "--n", "12", "--quoted", "4", "--repeat", "1", "--json", stdout=out)

    result = json.loads(out.getvalue())
    assert result["n"] == 12 and result["quoted"] == 4
    inscriptis = next(row for row in result["rows"] if row["library"] == "inscriptis")
    assert inscriptis["leaks"] == 0 and inscriptis["quoted_found"] == 4
