"""The backtest engine (scoring.backtest): the literal prefilter derived from each rule, and which
messages a draft routes differently from the active rules. Pure, except the soundness test, which
reads the seeded rule sets."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from scoring.backtest import (
    ASCII_CASE_TWINS,
    AllOf,
    AnyOf,
    Literal,
    ScanCounts,
    anchored_matches,
    anchors,
    literal_odds,
    predicate,
    prefilter_text,
    required,
    rule_diff,
    rule_key,
    rule_required,
    scan,
)
from scoring.rules import CompiledRules, RuleSpec, compile_rule, match

CORPUS = Path(__file__).resolve().parents[2] / "scoring" / "corpus" / "claims.jsonl"


def spec(code: str, pattern: str, claim_type: str = "guaranteed_returns", **fields) -> RuleSpec:
    return RuleSpec(
        rule_id=hash(code) % 1000,
        code=code,
        rule_set_version=1,
        claim_type=claim_type,
        pattern=pattern,
        **fields,
    )


def test_the_literals_a_match_must_contain_come_from_the_parsed_pattern():
    assert required(r"guaranteed\s+returns?") == AllOf((Literal("guaranteed"), Literal("return")))
    assert required(r"\b(?:assured|certain)\s+income") == AllOf(
        (AnyOf((Literal("assured"), Literal("certain"))), Literal("income"))
    )
    assert required(r"(?:not\s+)?risk[- ]?free") == AllOf((Literal("risk"), Literal("free")))
    assert required(r"SEC[-]approved") == Literal("sec-approved")  # one-character class joins the run
    assert required(r"(?:a|\w+)\s+gain") == Literal("gain")  # an alternative that needs nothing
    assert required(r"\d+%?") is None
    assert required(r"garantie\u0301") is None or required(r"garantie\u0301").ok("x") is False


def test_a_context_rule_also_needs_one_of_its_context_terms():
    rule = spec("RF-9", r"risk[- ]free", context_terms=("invest*", "capital gain"))
    requirement = rule_required(rule)

    assert requirement.ok(prefilter_text("A risk-free investment."))
    assert requirement.ok(prefilter_text("Risk free, and a capital gain too."))
    assert not requirement.ok(prefilter_text("Start your risk-free 30-day trial."))


def test_the_case_twins_are_every_non_ascii_letter_that_matches_an_ascii_one_case_insensitively():
    letter = re.compile("[a-z]", re.IGNORECASE)
    twins = {
        chr(cp) for cp in range(0x80, 0x10000) if not 0xD800 <= cp < 0xE000 and letter.fullmatch(chr(cp))
    }

    assert twins == {chr(cp) for cp in ASCII_CASE_TWINS}
    # and the prefilter lets a match written with them through
    rule = spec("GR-9", r"guaranteed\s+returns?")
    text = "Your guaranteed returns, \u212aeep them: GUARANTEED RETURN\u017f".replace(
        "guaranteed returns", "x"
    )
    assert match(text, CompiledRules(rules=(compile_rule(rule),)))
    assert rule_required(rule).ok(prefilter_text(text))


def test_the_prefilter_never_rejects_a_text_a_seeded_rule_matches_and_rejects_most_others(db):
    from scoring.models import RuleSet
    from scoring.selectors import rule_spec_of

    specs = [rule_spec_of(r, s.version) for s in RuleSet.objects.all() for r in s.rules.all()]
    texts = [json.loads(line)["body"] for line in CORPUS.read_text().splitlines()[:1500]]
    rejected = checked = 0
    for rule in specs:
        compiled = CompiledRules(rules=(compile_rule(rule),))
        requirement = rule_required(rule)
        for text in texts:
            passes = requirement is None or requirement.ok(prefilter_text(text))
            if match(text, compiled):
                assert passes, (rule.code, text)
            checked += 1
            rejected += not passes
    assert len(specs) >= 30 and rejected / checked > 0.8


def test_ordered_prefilters_give_every_text_the_same_verdict_and_test_the_rare_literal_first(db):
    from scoring.models import RuleSet
    from scoring.selectors import rule_spec_of

    specs = [rule_spec_of(r, s.version) for s in RuleSet.objects.all() for r in s.rules.all()]
    texts = [prefilter_text(json.loads(line)["body"]) for line in CORPUS.read_text().splitlines()[:800]]
    requirements = [rule_required(rule) for rule in specs]
    odds = literal_odds(requirements, texts[:100])
    for requirement in requirements:
        plain, ordered = predicate(requirement), predicate(requirement, odds)
        assert [plain(t) for t in texts] == [ordered(t) for t in texts]

    requirement = AllOf((AnyOf((Literal("is"), Literal("are"))), AllOf((Literal("we"), Literal("lose")))))
    odds = literal_odds([requirement], ["we are here", "is it we", "we lose", "are we"])
    assert odds == {"is": 0.25, "are": 0.5, "we": 1.0, "lose": 0.25}

    class Counting(str):
        searched: list[str] = []

        def __contains__(self, literal):
            Counting.searched.append(literal)
            return str.__contains__(self, literal)

    assert predicate(requirement, odds)(Counting("are we")) is False
    assert Counting.searched == ["lose"]  # the nested AND flattened, its rarest literal first
    Counting.searched.clear()
    assert predicate(requirement, odds)(Counting("we are sure to lose")) is True
    assert Counting.searched == ["lose", "are", "we"]  # in the OR, the likelier literal first


def test_a_diff_orders_its_prefilters_once_on_the_first_texts_it_scans():
    diff = rule_diff(ACTIVE, DRAFT)
    assert diff.tuned([]) is diff  # nothing to measure on yet
    first = diff.tuned(["a risk-free investment", "will double"])

    assert first.odds is not None and first.odds["risk"] == 0.5
    assert diff.tuned(["something else entirely"]) is first and first.tuned(["x"]) is first
    assert {r.code for r in first.changed} == {r.code for r in diff.changed}
    assert first.candidate("this will double") and not first.candidate("nothing here")


ACTIVE = [
    spec("GR-1", r"guaranteed\s+returns?"),  # unchanged
    spec("RF-1", r"risk[- ]?free"),  # the draft adds context terms: no more "risk-free trial"
    spec("RE-1", r"SEC\s+approved", claim_type="regulatory_endorsement"),  # dropped by the draft
]
DRAFT = [
    ACTIVE[0],
    spec("RF-1", r"risk[- ]?free", claim_type="risk_free", context_terms=("invest*",)),
    spec("PF-1", r"will\s+double", claim_type="performance_forecast"),  # new, negation guard on
]


def run(texts: dict[int, str], segments=None) -> tuple[dict[int, str], ScanCounts]:
    counts = ScanCounts()
    changes = scan(
        [(i, text, (segments or {}).get(i)) for i, text in texts.items()],
        rule_diff(ACTIVE, DRAFT),
        counts=counts,
    )
    return {c.message_id: c.kind for c in changes}, counts


def test_the_scan_reports_what_the_draft_routes_differently_and_nothing_else():
    texts = {
        1: "This stock will double by March.",  # new rule: added
        2: "We can't promise this stock will double.",  # negated: nothing
        3: "Start your risk-free trial today.",  # context rule: removed
        4: "A risk-free investment for you.",  # routed by both
        5: "The SEC approved this fund.",  # dropped rule: removed
        6: "The SEC approved this fund with guaranteed returns.",  # an unchanged rule routes it anyway
        7: "Please find the letter attached.",  # nothing
    }

    changes, counts = run(texts)

    assert changes == {1: "added", 3: "removed", 5: "removed"}
    assert counts.messages == 7 and counts.candidates < 7  # message 7 never reached a regex


def test_a_hit_outside_the_routing_parts_does_not_route():
    quoted = "Thanks.\n\n> On Monday you wrote:\n> This stock will double by March."
    parts = {
        1: [
            {"kind": "body", "start": 0, "end": 7, "routes": True},
            {"kind": "quoted", "start": 9, "end": len(quoted), "routes": False},
        ]
    }

    assert run({1: quoted}, parts)[0] == {}
    assert run({1: quoted})[0] == {1: "added"}  # a whole-text model routes on every part


# --- Faster matching, same matches --------------------------------------------------------------


def test_the_anchors_are_the_literals_every_match_starts_with():
    assert anchors(r"\bguarantee[ds]?\s+returns") == ("guarantee",)
    assert anchors(r"\b(?:assured|Certain)\s+income") == ("assured", "certain")
    assert anchors(r"(?:not\s+)?risk[- ]?free") == ("not", "risk")  # an optional start adds its own
    assert anchors(r"(?<!no )(?=\w)SEC\b") == ("sec",)  # look-arounds and \b take no room
    assert anchors(r"[- ]?x") == (" ", "-", "x")
    assert anchors(r"(?:gain|gains|g)\b") == ("g",)  # a prefix of another finds its places too
    assert anchors(r"\d+%") is None  # a class: could start anywhere
    assert anchors(r"x?") is None  # can match empty
    assert anchors(r"caf\u00e9") is None  # not ASCII


def test_the_anchored_search_finds_what_a_whole_text_search_finds():
    cases = [
        (r"aa", "aaaa aAa"),  # overlapping places: finditer's stepping
        (r"\bis\b", "This is it; IS this?"),  # \b reads the character before the place
        (r"(?<=x)yz|yz", "xyz yz"),
        (r"(?:no|not)\s+risk", "not risk, NO RISK, Not  risk"),
    ]
    for pattern, text in cases:
        regex = re.compile(pattern, re.IGNORECASE)
        found = anchored_matches(regex, anchors(pattern), text, text.lower())
        assert [m.span() for m in found] == [m.span() for m in regex.finditer(text)], pattern


def _seeded_specs() -> list[RuleSpec]:
    from scoring.models import RuleSet
    from scoring.selectors import rule_spec_of

    return [rule_spec_of(r, s.version) for s in RuleSet.objects.all() for r in s.rules.all()]


def _rows(texts: dict[int, str]) -> list[tuple[int, str, None]]:
    """Rows as the scan reads them, with no stored routing parts (the whole text routes)."""
    return [(i, text, None) for i, text in texts.items()]


def _texts() -> list[str]:
    import random

    from monitoring.bench_backtest import _body

    corpus = [json.loads(line)["body"] for line in CORPUS.read_text().splitlines()[:1200]]
    rng = random.Random(7)
    bench = [_body(rng) for _ in range(300)]
    odd = [
        "Your capital is safe \u2014 the SEC\u2011approved fund\u2019s returns are guaranteed.",
        "We cannot, and will not, promise it. Returns are guaranteed" + "x" * 400 + " for investors.",
        "risk-free " + "supercalifragilistic" * 30 + " investment",
        "This stock will double. " * 40,
    ]
    # What each bench draft changes, whatever the corpus rows hold: a hit of GR-004 alone (which
    # the draft "few" drops), its two new rules' phrases, and a context term one word further out
    # at each distance around every context window (the draft "all" widens each by one word).
    drafted = ["Certain income, year after year.", "This one is going to the moon.", "Bulletproof capital."]
    filler = ["and", "the", "rest", "of", "the", "plan", "stays", "simple", "and", "tidy"]
    drafted += [f"The plan is risk-free {' '.join(filler[:n])} capital." for n in range(3, 10)]
    return corpus + bench + odd + drafted


def test_the_anchored_search_finds_every_seeded_rules_matches_on_the_corpus(db):
    specs = _seeded_specs()
    texts = [t for t in _texts() if t.isascii()]
    checked = 0
    for rule in specs:
        regex = compile_rule(rule).regex
        starts = anchors(rule.pattern)
        for text in texts:
            found = anchored_matches(regex, starts, text, text.lower())
            assert [m.span() for m in found] == [m.span() for m in regex.finditer(text)], (rule.code, text)
            checked += bool(found)
    assert len(specs) >= 30 and checked > 100
    assert sum(anchors(rule.pattern) is not None for rule in specs) > len(specs) / 2


def _routing_by_full_match(texts: dict[int, str], active, draft) -> dict[int, tuple[str, set]]:
    """The reference: every rule of both sets on every text, no prefilter, no anchors, no sharing."""
    from scoring.rules import compile_rules

    shared = {rule_key(s) for s in active} & {rule_key(s) for s in draft}
    sides = {
        "active": compile_rules(dataclasses.replace(s, rule_id=i) for i, s in enumerate(active, 1)),
        "draft": compile_rules(dataclasses.replace(s, rule_id=-i) for i, s in enumerate(draft, 1)),
    }
    keys = {
        "active": {i: rule_key(s) for i, s in enumerate(active, 1)},
        "draft": {-i: rule_key(s) for i, s in enumerate(draft, 1)},
    }
    expected = {}
    for message_id, text in texts.items():
        hits = {side: match(text, compiled) for side, compiled in sides.items()}
        if bool(hits["active"]) == bool(hits["draft"]):
            continue
        side = "draft" if hits["draft"] else "active"
        own = {(h.code, h.start, h.end) for h in hits[side] if keys[side][h.rule_id] not in shared}
        expected[message_id] = ("added" if side == "draft" else "removed", own)
    return expected


def test_the_scan_finds_what_matching_every_rule_of_both_sets_finds(db):
    from monitoring.bench_backtest import drafts
    from scoring.selectors import active_rule_set, rule_spec_of

    active_set = active_rule_set()
    active = [rule_spec_of(r, active_set.version) for r in active_set.rules.all() if r.enabled]
    texts = dict(enumerate(_texts(), start=1))
    for name, draft in {
        **drafts(active),
        "terms": [
            dataclasses.replace(s, context_terms=(*s.context_terms, "team")) if s.context_terms else s
            for s in active
        ],
    }.items():
        found = scan(_rows(texts), rule_diff(active, draft))
        got = {c.message_id: (c.kind, {(h.code, h.start, h.end) for h in c.hits}) for c in found}
        assert got == _routing_by_full_match(texts, active, draft), name
        assert got, name  # each draft changes something on these texts


def test_the_seeded_rules_hit_the_same_spans_with_the_words_around_a_match_as_with_the_whole_text(db):
    from scoring.rules import compile_rules
    from tests.scoring.test_rules import _hits_with_a_whole_text_word_index

    specs = [dataclasses.replace(s, rule_id=i) for i, s in enumerate(_seeded_specs(), start=1)]
    compiled = compile_rules(specs)
    hit = 0
    for text in _texts():
        got = [(h.rule_id, h.start, h.end) for h in match(text, compiled)]
        assert got == _hits_with_a_whole_text_word_index(text, specs), text
        hit += bool(got)
    assert hit > 100


def test_a_window_edit_of_a_rule_without_context_terms_is_reported_but_not_scanned_as_a_change():
    # given: the window is read only for context terms, so GR-1's edit cannot change a hit
    active = [
        spec("GR-1", r"guaranteed\s+returns?"),
        spec("RF-1", r"risk[- ]?free", context_terms=("invest*",)),
    ]
    draft = [dataclasses.replace(s, context_window=s.context_window + 4) for s in active]

    # when
    diff = rule_diff(active, draft)

    # then: RF-1's edit can change hits, GR-1's cannot; both are edits the draft made
    assert [r.code for r in diff.active_only] == ["RF-1"] and [r.code for r in diff.draft_only] == ["RF-1"]
    assert [r.code for r in diff.shared] == ["GR-1"]
    assert diff.changed_codes == {"added": [], "removed": [], "changed": ["GR-1", "RF-1"]}


def test_the_order_the_scan_tries_the_rules_in_changes_no_result(db, monkeypatch):
    # given: a draft whose every context rule hits a little more, so that most messages with a hit
    # are routed under both sets and the scan stops at the first pair of rules that shows it
    from monitoring.bench_backtest import drafts
    from scoring import backtest
    from scoring.selectors import active_rule_set, rule_spec_of

    active_set = active_rule_set()
    active = [rule_spec_of(r, active_set.version) for r in active_set.rules.all() if r.enabled]
    draft = drafts(active)["all"]
    texts = dict(enumerate(_texts(), start=1))
    expected = _routing_by_full_match(texts, active, draft)

    for every in (1, 7, 10_000):  # reorder after every candidate, now and then, never
        monkeypatch.setattr(backtest._Order, "EVERY", every)
        # when
        found = scan(_rows(texts), rule_diff(active, draft))

        # then
        got = {c.message_id: (c.kind, {(h.code, h.start, h.end) for h in c.hits}) for c in found}
        assert got == expected, every
    assert expected


def test_a_scan_split_with_a_helper_process_finds_the_same_changes(db):
    from monitoring.bench_backtest import drafts
    from scoring.backtest_helper import ScanHelper
    from scoring.selectors import active_rule_set, rule_spec_of

    active_set = active_rule_set()
    active = [rule_spec_of(r, active_set.version) for r in active_set.rules.all() if r.enabled]
    # every third message routes in its first half only, its parts stored as JSON text (as read)
    rows = [
        (i, t, json.dumps([{"start": 0, "end": len(t) // 2, "routes": True}]) if i % 3 == 0 else None)
        for i, t in enumerate(_texts(), start=1)
    ]

    for name, draft in drafts(active).items():
        diff = rule_diff(active, draft)
        alone, split = ScanCounts(), ScanCounts()
        expected = []
        for start in range(0, len(rows), 250):
            expected += scan(rows[start : start + 250], diff, counts=alone)
        # when: a share of every chunk is scanned by the helper, collected on the next call (the
        # share moves between chunks with the waits)
        with ScanHelper(active, draft) as helper:
            found = []
            for start in range(0, len(rows), 250):
                found += scan(rows[start : start + 250], diff, counts=split, helper=helper)
            found += helper.collect(split)
        found.sort(key=lambda change: change.message_id)
        # then
        assert found == expected and expected, name
        assert dataclasses.asdict(split) == dataclasses.asdict(alone), name


def test_a_failure_in_the_helper_process_is_raised_in_the_parent():
    from scoring.backtest_helper import ScanHelper

    with ScanHelper(ACTIVE, DRAFT) as helper:
        helper.submit([(1, None, None)])  # not a text
        with pytest.raises(RuntimeError, match="helper failed"):
            helper.collect(ScanCounts())
        helper.submit([(2, "This stock will double by March.", None)])  # and it carries on
        assert [c.message_id for c in helper.collect(ScanCounts())] == [2]
