"""text/enriched (RFC 1896) and text/richtext (RFC 1341) read as text (scoring.sources.enriched)."""

from __future__ import annotations

from scoring.sources.enriched import MAX_QUOTE_DEPTH, enriched_to_text


def test_commands_are_dropped_and_parameters_with_them():
    text = enriched_to_text(
        "<bold>Returns</bold> are <x-color><param>0000,0000,ffff</param>guaranteed</x-color>"
        "<fontfamily><param>Times New Roman</param></fontfamily>."
    )

    assert text == "Returns are guaranteed."


def test_a_double_less_than_is_one_and_a_lone_one_is_kept():
    assert enriched_to_text("<<bold> is a command; 3 < 4") == "<bold> is a command; 3 < 4"


def test_one_line_break_is_a_space_and_n_line_breaks_are_n_minus_one_outside_nofill():
    text = enriched_to_text("Your capital\r\nis safe.\r\n\r\nZero risk.\n\n\nReally.\n<nofill>a\nb</nofill>")

    assert text == "Your capital is safe.\nZero risk.\n\nReally. a\nb"


def test_excerpts_are_quoted_lines_one_level_per_nesting():
    text = enriched_to_text("No.<excerpt>Is it safe?<excerpt>Who asked?</excerpt></excerpt>\nBob")

    assert text == "No.\n> Is it safe?\n>> Who asked?\nBob"


def test_richtext_line_breaks_and_less_than_signs_are_read():
    text = enriched_to_text("Returns <bold>guaranteed</bold><nl>at <lt>8%", richtext=True)

    assert text == "Returns guaranteed\nat <8%"


def test_excerpts_nested_past_the_limit_get_no_more_quote_marks():
    # given: 240 KB of 20,000 nested excerpts over 20,000 lines, which wrote 400 MB
    markup = "<excerpt>" * 20_000 + "x\n\n" * 20_000

    # when
    lines = enriched_to_text(markup).split("\n")

    # then: every line read, each with MAX_QUOTE_DEPTH quote marks
    assert lines == [">" * MAX_QUOTE_DEPTH + " x"] * 20_000
