"""What a calendar invitation says in words (scoring.sources.ical): its properties' values, without
their parameters, and Outlook's HTML description when it says something else."""

from __future__ import annotations

import pytest

from scoring.sources.ical import calendar_text, calendar_text_beside


def test_a_calendar_property_s_parameters_are_skipped_even_when_a_quoted_one_holds_a_colon():
    # given: parameters before the value (RFC 5545, 3.1), quoted ones holding ":" and ";"
    ical = (
        "BEGIN:VEVENT\r\n"
        'DESCRIPTION;ALTREP="cid:part1.0001@example.org":Returns are guaranteed at 8%\r\n'
        'LOCATION;ALTREP="https://maps.example/?q=a;b:c";LANGUAGE=en-GB:Room 4\\, Harbor House\r\n'
        "SUMMARY;LANGUAGE=en-GB:Income seminar at 10:30\r\n"
        "END:VEVENT\r\n"
    )

    # when
    text = calendar_text(ical)

    # then
    assert text == (
        "Description: Returns are guaranteed at 8%\n"
        "Location: Room 4, Harbor House\n"
        "Title: Income seminar at 10:30"
    )


def test_a_calendar_line_whose_quote_never_closes_is_still_read_from_its_first_colon():
    text = calendar_text('DESCRIPTION;ALTREP="cid:part1@example.org:Your capital is safe\r\n')

    assert text == "Description: part1@example.org:Your capital is safe"


def outlook_event(description: str, html: str) -> str:
    """An Outlook invitation's event: DESCRIPTION, then X-ALT-DESC holding `html` in Exchange's
    HTML page, escaped and folded as Outlook writes it."""
    page = (
        '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2//EN">\\n<HTML>\\n<HEAD>\\n<META NAME="Generator" '
        'CONTENT="MS Exchange Server version 16.0.17328.20000">\\n<TITLE></TITLE>\\n</HEAD>\\n<BODY>\\n'
        "<!-- Converted from text/rtf format -->\\n\\n" + html + "\\n\\n</BODY>\\n</HTML>"
    )
    folded = "\r\n ".join(page[i : i + 70] for i in range(0, len(page), 70))
    return (
        "BEGIN:VEVENT\r\nSUMMARY;LANGUAGE=en-GB:Income seminar\r\n"
        + (f"DESCRIPTION;LANGUAGE=en-GB:{description}\r\n" if description else "")
        + f"X-ALT-DESC;FMTTYPE=text/html:{folded}\r\nEND:VEVENT\r\n"
    )


def test_outlook_s_html_description_is_read_when_it_says_more_than_the_plain_one():
    # given: the plain DESCRIPTION says one thing, the HTML one (X-ALT-DESC) another
    ical = outlook_event(
        "Please join us.\\n",
        '<P DIR=LTR><SPAN LANG="en-gb"><FONT FACE="Calibri">Please join us. Returns are <B>guaranteed'
        "</B> at 8%\\, zero risk.</FONT></SPAN></P>",
    )

    text = calendar_text(ical)

    assert text == (
        "Title: Income seminar\nDescription: Please join us.\n"
        "Description (HTML): Please join us. Returns are guaranteed at 8%, zero risk."
    )


def test_outlook_s_html_description_that_repeats_the_plain_one_is_not_read_again():
    ical = outlook_event(
        "Our bond pays 7%\\, guaranteed.\\nSee you there.\\n",
        '<P DIR=LTR><FONT FACE="Calibri">Our bond pays 7%\\, <B>guaranteed</B>.</FONT></P>\\n'
        '<P DIR=LTR><FONT FACE="Calibri">See you there.</FONT></P>',
    )

    text = calendar_text(ical)

    assert text == "Title: Income seminar\nDescription: Our bond pays 7%, guaranteed.\nSee you there."


def test_outlook_s_html_description_without_a_plain_one_is_read():
    text = calendar_text(outlook_event("", "<P>Your capital is <I>bulletproof</I>.</P>"))

    assert text == "Title: Income seminar\nDescription (HTML): Your capital is bulletproof."


def test_an_invitation_beside_a_text_gives_only_the_lines_of_each_field_the_text_does_not_say():
    ical = (
        "BEGIN:VEVENT\r\nSUMMARY:Income seminar\r\nLOCATION:Room 4\r\n"
        "DESCRIPTION:Please join us.\\nOur bond pays 7%\\, guaranteed.\r\nEND:VEVENT\r\n"
    )

    text = calendar_text_beside(ical, "Income seminar, Room 4\n\nPlease join us!")

    assert text == "Description: Our bond pays 7%, guaranteed."
    assert (
        calendar_text_beside(ical, "Income seminar Room 4 Please join us. Our bond pays 7% guaranteed") == ""
    )


@pytest.mark.timeout(10)
def test_a_long_invitation_beside_a_long_text_is_compared_in_one_pass_over_each():
    # given: 2,000 titles beside a 110 KB text (the text was tokenised again for each field, and
    # searched whole for each line: 400 titles took 7 s)
    body = " ".join(f"w{i % 50} x{i}" for i in range(10_000))
    ical = "BEGIN:VEVENT\r\n" + "".join(f"SUMMARY:x{i} w{(i + 1) % 50}\r\n" for i in range(2_000))
    ical += "SUMMARY:returns are guaranteed\r\nEND:VEVENT\r\n"

    # then: the titles the text says are left out, the one it does not is read
    assert calendar_text_beside(ical, body) == "Title: returns are guaranteed"
