"""What counts as text to score (scoring.text): one rule for the scorer, ingest, the mail reader
and the API's schema."""

from __future__ import annotations

import re
import sys

import jsonschema_rs
import pytest

from scoring.text import content_pattern, has_content

NOTHING = [
    "",
    " \n\t",
    "\u200b\u200b\u200b",
    "\u0007\u0007",
    "\u00ad",
    "\ufeff\u2028\u00a0",
    "\ue000",
    "\u0301\u0301",  # combining marks on no letter: stripped with the accents
    "\ufffd\ufffd",  # what a decoder leaves for unreadable bytes
]
SOMETHING = ["Hi", "\u200bHi", "😀", "é", "e\u0301", "\u00ad-", "\u0903", "\ufffdx"]


@pytest.mark.parametrize("text", NOTHING)
def test_a_text_of_whitespace_control_and_format_characters_has_no_content(text):
    assert not has_content(text)


@pytest.mark.parametrize("text", SOMETHING)
def test_a_text_with_one_readable_character_has_content(text):
    assert has_content(text)


def test_the_schemas_pattern_matches_exactly_the_texts_with_content_and_no_nul():
    # every character on its own
    pattern = re.compile(content_pattern())
    disagree = [
        hex(code_point)
        for code_point in range(sys.maxunicode + 1)
        if bool(pattern.fullmatch(chr(code_point))) != (has_content(chr(code_point)) and code_point != 0)
    ]

    assert disagree == []
    for text in [*NOTHING, *SOMETHING, "Hi\x00", "\x00Hi", "\u200b\x00Hi", "Hi\u200b\n"]:
        assert bool(pattern.fullmatch(text)) == (has_content(text) and "\x00" not in text), repr(text)


def test_the_schemas_pattern_reads_the_same_in_the_json_schema_validator():
    # jsonschema-rs (Rust's regex: schemathesis validates with it) compiles it and agrees with
    # has_content, around the surrogates too
    validator = jsonschema_rs.validator_for({"type": "string", "pattern": content_pattern()})

    edges = ["Hi\x00", "\u200b\x00Hi", "\U000e0001\U000f0000x", "\ud7ff", "\ue000", "\ud7fbx"]
    for text in [*NOTHING, *SOMETHING, *edges]:
        assert validator.is_valid(text) == (has_content(text) and "\x00" not in text), repr(text)
