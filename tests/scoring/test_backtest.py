"""The backtest engine (scoring.backtest): the literal prefilter derived from each rule, and which
messages a draft routes differently from the active rules. Pure, except the soundness test, which
reads the seeded rule sets."""

from __future__ import annotations

import json
import re
from pathlib import Path

from scoring.backtest import (
    ASCII_CASE_TWINS,
    AllOf,
    AnyOf,
    Literal,
    ScanCounts,
    prefilter_text,
    required,
    rule_diff,
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
        texts.items(),
        rule_diff(ACTIVE, DRAFT),
        segments_of=lambda ids: {i: (segments or {}).get(i) for i in ids},
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
