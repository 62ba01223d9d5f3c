"""How two forms of one text are compared (scoring.sources.wording)."""

from __future__ import annotations

from scoring.sources.wording import tokens, unsaid_lines


def test_words_are_case_folded_runs_of_letters_and_digits_without_links_or_addresses():
    text = "Click HERE <https://x.example/a?b=1>, mail bob@bank.example or www.bank.example: 8%!"

    assert tokens(text) == ["click", "here", "mail", "or", "8"]


def test_a_line_is_said_only_when_its_words_come_one_after_the_other_in_the_text():
    said = "Income seminar. Our bond pays 7%, guaranteed! Returns are not guaranteed."

    unsaid = unsaid_lines(
        "Our bond pays 7% guaranteed\nReturns are guaranteed\n-::~:~::-\n\nINCOME seminar", said
    )

    assert unsaid == "Returns are guaranteed"
