"""How two forms of one text are compared (scoring.sources.wording)."""

from __future__ import annotations

import random

import pytest

from scoring.sources.wording import FORM_WORDS_MORE, Said, lacking, says_more, tokens, unsaid_lines


def test_words_are_case_folded_runs_of_letters_and_digits_without_links_or_addresses():
    text = "Click HERE <https://x.example/a?b=1>, mail bob@bank.example or www.bank.example: 8%!"

    assert tokens(text) == ["click", "here", "mail", "or", "8"]


def test_a_line_is_said_only_when_its_words_come_one_after_the_other_in_the_text():
    said = "Income seminar. Our bond pays 7%, guaranteed! Returns are not guaranteed."

    unsaid = unsaid_lines(
        "Our bond pays 7% guaranteed\nReturns are guaranteed\n-::~:~::-\n\nINCOME seminar", said
    )

    assert unsaid == "Returns are guaranteed"


def test_a_form_says_more_when_empty_beside_it_or_far_longer_or_another_text_altogether():
    letter = (
        "Dear investor, " + " ".join(f"w{i}" for i in range(FORM_WORDS_MORE)) + " returns are guaranteed."
    )

    assert says_more(letter, "") and not says_more("", letter)
    assert says_more(letter, "Dear investor,") and not says_more("Dear investor,", letter)
    assert says_more("Returns are guaranteed.", "Use an HTML-capable email client.")
    assert says_more("Use an HTML-capable email client.", "Returns are guaranteed.")


def test_a_form_that_adds_a_footer_or_repeats_a_word_does_not_say_more():
    text = "Hi Ann, your statement is attached. Best, Bob"

    assert not says_more(text + " Northfield Wealth, 1 Example Street. Unsubscribe", text)
    assert not says_more(text.upper() + " <https://bank.example/statement>", text)
    assert lacking("guaranteed guaranteed returns", "returns are guaranteed") == 1


@pytest.mark.timeout(10)
def test_words_of_a_long_text_of_at_signs_are_found_in_linear_time():
    # given: 200 KB that a pattern for addresses across the whole text took cubic time on
    text = "a@" * 100_000 + " and returns are guaranteed"

    # then: one word, an address, left out; the rest read
    assert tokens(text) == ["and", "returns", "are", "guaranteed"]
    assert tokens("(www.bank.example) MAILTO:bob x://y 8%") == ["8"]


def test_a_line_is_said_exactly_when_its_words_are_a_run_of_the_text_s_words():
    # given: texts of few distinct words, where runs repeat and overlap
    generator = random.Random(18)
    for _ in range(200):
        said_words = [generator.choice("abc") for _ in range(generator.randrange(30))]
        said = Said(" ".join(said_words))
        for _ in range(20):
            line = [generator.choice("abc") for _ in range(generator.randrange(1, 6))]

            # then: as a search of the joined words finds
            expected = f" {' '.join(line)} " in f" {' '.join(said_words)} "
            assert said.says(line) == expected
