"""The rule engine on its own: no database, rules written here."""

from __future__ import annotations

import re
import string

import pytest

from scoring.rules import NEGATION_WINDOW, RuleError, RuleSpec, compile_rules, match, nested_repeat


def rule(
    pattern: str,
    *,
    rule_id: int = 1,
    code: str = "T-001",
    claim_type: str = "guaranteed_returns",
    context: tuple[str, ...] = (),
    window: int = 8,
    negation_guard: bool = True,
    version: int = 1,
) -> RuleSpec:
    return RuleSpec(
        rule_id=rule_id,
        code=code,
        rule_set_version=version,
        claim_type=claim_type,
        pattern=pattern,
        context_terms=context,
        context_window=window,
        negation_guard=negation_guard,
    )


def texts_hit(text: str, *specs: RuleSpec) -> list[str]:
    return [hit.text for hit in match(text, compile_rules(specs))]


GUARANTEED = rule(r"\bguarantee[ds]?\b", context=("returns", "yield"))


def test_guaranteed_returns_is_a_hit_and_guaranteed_delivery_is_not():
    assert texts_hit("We offer guaranteed returns on every deposit.", GUARANTEED) == ["guaranteed"]
    assert texts_hit("We offer guaranteed delivery on every order.", GUARANTEED) == []


def test_risk_free_investment_is_a_hit_and_risk_free_trial_is_not():
    risk_free = rule(r"\brisk[- ]?free\b", claim_type="risk_free", context=("invest*", "capital"))
    assert texts_hit("This is a risk-free investment for your savings.", risk_free) == ["risk-free"]
    assert texts_hit("Start your risk-free 30-day trial today.", risk_free) == []


def test_sec_approved_this_fund_is_a_hit_and_sec_filing_attached_is_not():
    endorsement = rule(
        r"\bSEC\s+(?:has\s+)?(?:approved|endorsed)\b", claim_type="regulatory_endorsement", context=("fund",)
    )
    assert texts_hit("Good news: the SEC approved this fund.", endorsement) == ["SEC approved"]
    assert texts_hit("The SEC filing is attached.", endorsement) == []


@pytest.mark.parametrize(
    "text",
    [
        "Returns are not guaranteed.",
        "We cannot guarantee returns.",
        "We can\u2019t guarantee returns.",
        "No guaranteed yield.",
    ],
)
def test_a_negation_just_before_the_phrase_suppresses_the_hit(text):
    assert texts_hit(text, GUARANTEED) == []


def test_returns_are_guaranteed_without_a_negation_is_a_hit():
    assert texts_hit("Returns are guaranteed.", GUARANTEED) == ["guaranteed"]


def test_without_the_negation_guard_a_negated_phrase_still_hits():
    unguarded = rule(r"\bguarantee[ds]?\b", context=("returns",), negation_guard=False)
    assert texts_hit("Returns are not guaranteed.", unguarded) == ["guaranteed"]


def test_only_the_few_words_just_before_the_match_are_searched_for_a_negation():
    assert NEGATION_WINDOW == 7
    # "not" is the 7th word before "guaranteed": suppressed.
    assert texts_hit("I did not say to them the returns are guaranteed.", GUARANTEED) == []
    # "not" is the 8th word before "guaranteed": outside the look-back, so it hits.
    assert texts_hit("I did not say to them that the returns are guaranteed.", GUARANTEED) == ["guaranteed"]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        # a development set's reply: the negation is six words before the phrase
        ("There isn't an investment that is truly risk-free.", r"\brisk[- ]free\b"),
        # a registered adviser's signature disclaimer
        ("Nor does it imply that the SEC has approved the firm.", r"\bSEC\b[^.]{0,20}\bapproved\b"),
        # reported speech six words back
        ("My last adviser told me the property fund was risk free.", r"\brisk[- ]free\b"),
    ],
)
def test_a_negation_or_reporting_word_six_or_seven_words_back_suppresses_the_hit(text, pattern):
    assert texts_hit(text, rule(pattern)) == []
    assert texts_hit(text, rule(pattern, negation_guard=False))  # the guard is what suppresses it


@pytest.mark.parametrize(
    "text",
    [
        "Don't worry, your returns are guaranteed.",
        "No, returns are guaranteed.",
        "Nope, returns are guaranteed.",
    ],
)
def test_a_comma_ends_the_clause_so_a_negation_before_it_does_not_suppress(text):
    assert texts_hit(text, GUARANTEED) == ["guaranteed"]


def test_a_comma_right_after_a_negating_verb_keeps_the_negation():
    assert texts_hit("We do not, and cannot, guarantee returns.", GUARANTEED) == []


@pytest.mark.parametrize(
    "text",
    [
        "Can you tell me if the returns are guaranteed?",
        'Be careful with anyone offering "guaranteed returns" on crypto.',
        "A client said the caller claimed the returns were guaranteed.",
        "Schemes advertising guaranteed returns are usually frauds.",
        "You asked whether the returns are guaranteed. They are not.",
        "The text you sent me ('your returns are guaranteed, act today') is a scam.",
        "Please forward me anything like \u2018returns are guaranteed\u2019 for our log.",
        "A quiz: is 'returns are guaranteed.' allowed? No.",
    ],
)
def test_a_hit_that_is_asked_quoted_or_reported_is_suppressed_by_the_guard(text):
    assert texts_hit(text, GUARANTEED) == []


@pytest.mark.parametrize(
    "text",
    [
        "It's simple: returns are guaranteed.",  # apostrophes inside words quote nothing
        "Our clients' returns are guaranteed.",  # a possessive closes no quote
        "We call it 'the safe one' and returns are guaranteed.",  # the quote closed before the claim
        "'Guaranteed' is the word: returns are guaranteed.",
        "He said 'returns are guaranteed",  # opened, never closed on the line
    ],
)
def test_single_quotation_marks_suppress_only_a_hit_inside_the_quoted_passage(text):
    assert texts_hit(text, GUARANTEED) == ["guaranteed"]


def test_a_question_elsewhere_in_the_message_does_not_suppress_a_claim():
    assert texts_hit("Any questions? Returns are guaranteed.", GUARANTEED) == ["guaranteed"]


def test_as_i_said_is_the_senders_own_claim_not_reported_speech():
    assert texts_hit("As I said, returns are guaranteed.", GUARANTEED) == ["guaranteed"]


def test_a_negation_in_the_previous_sentence_does_not_suppress():
    assert texts_hit("Not bad. Returns are guaranteed.", GUARANTEED) == ["guaranteed"]
    assert texts_hit("No; returns are guaranteed.", GUARANTEED) == ["guaranteed"]


def test_context_terms_count_within_the_window_on_either_side_and_not_beyond():
    phrase = rule(r"\bguaranteed\b", context=("returns",), window=3)
    assert texts_hit("guaranteed one two returns", phrase) == ["guaranteed"]  # 3rd word after
    assert texts_hit("guaranteed one two three returns", phrase) == []  # 4th word after
    assert texts_hit("returns one two guaranteed", phrase) == ["guaranteed"]  # 3rd word before
    assert texts_hit("returns one two three guaranteed", phrase) == []


def test_a_context_term_inside_the_match_does_not_count_as_context():
    phrase = rule(r"\bguaranteed\s+returns\b", context=("returns",))
    assert texts_hit("guaranteed returns", phrase) == []
    assert texts_hit("guaranteed returns, returns every year", phrase) == ["guaranteed returns"]


def test_a_starred_context_term_is_a_prefix_and_a_plain_term_is_a_whole_word():
    prefixed = rule(r"\bsafe\b", claim_type="risk_free", context=("invest*",))
    whole = rule(r"\bsafe\b", rule_id=2, code="T-002", claim_type="risk_free", context=("fund",))
    assert texts_hit("a safe investment", prefixed) == ["safe"]
    assert texts_hit("safe and fundamental", whole) == []
    assert texts_hit("a safe fund", whole) == ["safe"]


def test_multi_word_context_terms_match_across_any_whitespace():
    phrase = rule(r"\bcannot\s+lose\b", claim_type="risk_free", context=("a penny",), negation_guard=False)
    assert texts_hit("You cannot lose a\npenny here.", phrase) == ["cannot lose"]


def test_matching_ignores_case_and_spans_index_the_original_text():
    text = "Hi team,\nOur GUARANTEED Returns beat the market."
    hits = match(text, compile_rules([rule(r"guaranteed\s+returns")]))
    assert len(hits) == 1
    hit = hits[0]
    assert text[hit.start : hit.end] == hit.text == "GUARANTEED Returns"
    assert (hit.rule_id, hit.code, hit.rule_set_version, hit.claim_type) == (
        1,
        "T-001",
        1,
        "guaranteed_returns",
    )


def test_curly_apostrophes_and_unicode_hyphens_keep_offsets_into_the_original():
    text = "It\u2019s a risk\u2011free investment."
    hits = match(text, compile_rules([rule(r"risk-free", claim_type="risk_free")]))
    assert [(h.start, h.end, h.text) for h in hits] == [(7, 16, "risk\u2011free")]


def test_hits_of_several_rules_are_sorted_by_position():
    first = rule(r"zero\s+risk", rule_id=7, code="RF-9", claim_type="risk_free")
    second = rule(r"guaranteed\s+returns", rule_id=3, code="GR-9")
    hits = match(
        "Guaranteed returns and zero risk, guaranteed returns again.", compile_rules([first, second])
    )
    assert [(h.code, h.start) for h in hits] == [("GR-9", 0), ("RF-9", 23), ("GR-9", 34)]


def test_two_rules_on_the_same_phrase_both_report_it():
    a = rule(r"guaranteed\s+returns", rule_id=1, code="A")
    b = rule(r"guaranteed", rule_id=2, code="B")
    hits = match("guaranteed returns", compile_rules([a, b]))
    assert [(h.code, h.start, h.end) for h in hits] == [("B", 0, 10), ("A", 0, 18)]


def test_a_rule_reports_each_stretch_of_text_once():
    repeated = rule(r"\bguaranteed(?:\s+guaranteed)*\b", context=("returns",))
    hits = match("returns: guaranteed guaranteed guaranteed", compile_rules([repeated]))
    assert [(h.start, h.end) for h in hits] == [(9, 41)]


def test_a_hit_at_the_end_of_a_long_message_has_the_right_offset():
    body = ("Please find the quarterly letter attached. " * 2400) + "Your returns are guaranteed."
    assert len(body) > 100_000
    hits = match(body, compile_rules([GUARANTEED]))
    assert len(hits) == 1
    assert body[hits[0].start : hits[0].end] == "guaranteed"
    assert hits[0].start == len(body) - len("guaranteed.")


def test_an_invalid_pattern_raises_an_error_that_names_the_rule():
    with pytest.raises(RuleError, match=r"Rule GR-042 \(id 9, rule set v4\): invalid pattern"):
        compile_rules([rule(r"guarant(eed", rule_id=9, code="GR-042", version=4)])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (rule(r"(?:returns)?"), "matches the empty text"),
        (rule("   "), "pattern is empty"),
        (rule(r"returns", window=0), "context window"),
        (rule(r"returns", context=("",)), "context term"),
    ],
)
def test_malformed_rules_are_refused_with_a_clear_reason(spec, message):
    with pytest.raises(RuleError, match=message):
        compile_rules([spec])


@pytest.mark.parametrize(
    "pattern", [r"(a+)+$", r"(?:\w+\s?)*x", r"(?:a*)*b", r"(a{2,}){11,}", r"(?:x(?:y+))+"]
)
def test_a_repeat_of_a_repeat_is_named_as_a_backtracking_risk(pattern):
    assert "catastrophic backtracking" in nested_repeat(pattern)


@pytest.mark.parametrize(
    "pattern", [r"(?:\w+\s+){0,3}returns", r"(a++)+", r"\bguaranteed\s+returns\b", r"(a|b)+"]
)
def test_a_bounded_possessive_or_flat_repeat_is_not(pattern):
    assert nested_repeat(pattern) is None


def test_no_rules_or_empty_text_give_no_hits_and_a_non_string_is_refused():
    assert match("guaranteed returns", compile_rules([])) == []
    assert match("", compile_rules([GUARANTEED])) == []
    with pytest.raises(TypeError):
        match(b"guaranteed returns", compile_rules([GUARANTEED]))


def _hits_with_a_whole_text_word_index(text: str, specs: list[RuleSpec]) -> list[tuple]:
    """The guards as they were before _around: one word index of the whole text."""
    from scoring import rules as engine

    folded = text.translate(engine._FOLD)
    index = engine._WordIndex(folded)
    found = []
    for compiled in compile_rules(specs).rules:
        for m in compiled.regex.finditer(folded):
            start, end = m.span()
            if compiled.spec.negation_guard and engine._guarded(folded, index, start, end):
                continue
            if compiled.context is not None and not engine._in_context(folded, index, compiled, start, end):
                continue
            found.append((compiled.spec.rule_id, start, end))
    return sorted(found, key=lambda h: (h[1], h[2], h[0]))


@pytest.mark.parametrize("window", [1, 3, 8, 30])
def test_the_guards_read_the_same_words_around_a_match_as_in_the_whole_text(window):
    specs = [
        rule(r"guaranteed\s+returns", rule_id=1, context=("fund", "invest*"), window=window),
        rule(r"\bwill\s+double\b", rule_id=2, context=("stock",), window=window, negation_guard=False),
        rule(r"risk[- ]free", rule_id=3, window=window),
    ]
    long_word = "x" * 300
    texts = [
        "We do not, and cannot, say it: guaranteed returns on the fund.",
        f"Invest {long_word} now: guaranteed returns {long_word} fund.",
        f"{long_word}-{long_word}'s guaranteed returns in the fund-of-funds.",
        "not " + "word " * 40 + "guaranteed returns " + "word " * 40 + "fund",
        "fund " + "a " * (window - 1) + "guaranteed returns" + " b" * (window - 1) + " stock will double",
        "Never: risk-free. Don't worry, risk free! The stock? It will double " + "y " * window + "stock",
        "\u201cguaranteed returns\u201d \u2014 the fund\u2019s risk\u2011free stock will double",
    ]
    for text in texts:
        got = [(h.rule_id, h.start, h.end) for h in match(text, compile_rules(specs))]
        assert got == _hits_with_a_whole_text_word_index(text, specs), text
    assert any(match(text, compile_rules(specs)) for text in texts)


def test_a_match_inside_a_very_long_word_or_stretch_falls_back_to_the_whole_texts_words():
    specs = [
        rule(r"guaranteed", rule_id=1, context=("fund",), window=3),
        rule(r"returns", rule_id=2, context=("fund",), window=2000),
    ]
    texts = [
        "fund " + "a" * 9000 + "guaranteed" + "b" * 9000 + " fund",  # no word boundary for 9,000 chars
        "fund " + "x " * 3000 + "returns " + "y " * 1000 + "fund",  # a window of 2,000 words
        "fund guaranteed " + "z" * 20000,
    ]
    for text in texts:
        got = [(h.rule_id, h.start, h.end) for h in match(text, compile_rules(specs))]
        assert got == _hits_with_a_whole_text_word_index(text, specs), text[:40]
    assert [h.rule_id for h in match(texts[1], compile_rules(specs))] == [2]


def test_the_context_terms_look_ahead_lets_through_every_character_a_terms_first_letter_matches():
    # the look-ahead is a class of the terms' first letters: case-insensitively, each must match
    # exactly the characters its letter matches as a literal (k: the Kelvin sign too; s: the long s)
    every_char = "".join(chr(cp) for cp in range(0x10000) if not 0xD800 <= cp < 0xE000)
    letters = string.ascii_letters + string.digits + string.punctuation + "\u00e9\u00df\u0130\u03c3$\u20ac"
    for letter in letters:
        as_class = re.compile(f"[{re.escape(letter)}]", re.IGNORECASE)
        as_literal = re.compile(re.escape(letter), re.IGNORECASE)
        assert [m.start() for m in as_class.finditer(every_char)] == [
            m.start() for m in as_literal.finditer(every_char)
        ], letter


def test_context_terms_find_the_same_matches_as_the_plain_alternation_of_the_terms():
    from scoring.rules import compile_rule

    text = "Investments, CAPITAL's a  penny; etfs ETF-backed \u00c9PARGNE invest capitalism A Penny ok"
    cases = {
        ("invest*", "capital", "a penny", "ETF", "\u00e9pargne"): (
            r"\binvest[\w'\-]*|\bcapital\b|\ba\s+penny\b|\bETF\b|\b\u00e9pargne\b"
        ),
        ("capital", "**"): r"\bcapital\b|\b[\w'\-]*",  # a prefix of nothing: no look-ahead
    }
    for terms, alternation in cases.items():
        context = compile_rule(rule(r"x", context=terms)).context
        plain = re.compile(alternation, re.IGNORECASE)
        for lo in range(len(text)):
            for hi in range(lo, len(text) + 1, 3):
                got, want = context.search(text, lo, hi), plain.search(text, lo, hi)
                assert (got and got.span()) == (want and want.span()), (terms, lo, hi)


def test_rules_that_differ_only_in_their_window_hit_as_each_would_alone():
    # given: one pattern and context terms with many windows, matched together (they share each
    # match's context verdicts) and each alone
    windows = [12, 1, 3, 2, 8, 5, 30, 4]
    specs = [
        rule(
            r"\bwill\s+double\b",
            rule_id=i,
            context=("stock*", "a penny"),
            window=w,
            negation_guard=i % 2 == 0,
        )
        for i, w in enumerate(windows, start=1)
    ]
    texts = [
        "stock " + "w " * n + "it will double" + " v" * m + " a  penny. Not that it will double."
        for n in range(0, 14, 3)
        for m in range(0, 14, 4)
    ]
    outcomes = set()
    for text in texts:
        # when
        together = sorted((h.rule_id, h.start, h.end) for h in match(text, compile_rules(specs)))
        alone = sorted((h.rule_id, h.start, h.end) for s in specs for h in match(text, compile_rules([s])))
        # then
        assert together == alone, text
        outcomes.add(frozenset(h[0] for h in together))
    assert len(outcomes) >= 3  # the windows do decide: different rules hit different texts
