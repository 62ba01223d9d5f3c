"""The rule backtest's engine, pure (no Django): which stored messages a draft rule set would route
that the active rules do not, and the reverse, fast enough for a million messages.

Three ideas make it fast (bench_rules --backtest measures them):

1. **Only what changed is matched.** A rule with the same code, claim type, pattern, context terms,
   window and negation guard in both sets finds the same hits in both, so it cannot change a
   message's routing on its own. Every message is checked against the changed rules only (those of
   the active set that the draft changes or drops, and those of the draft that are new or changed);
   the unchanged rules are matched only on a message a changed rule hit, to learn whether it is
   routed by rules anyway.
2. **A literal prefilter before the full match.** From each changed rule's regular expression the
   engine derives the literal text any match must contain (`required`: an AND/OR of literals from
   the parsed pattern, as code-search prefilters do; a context rule also needs one of its context
   terms), and checks it with substring search (C speed) on the folded, lower-cased text before
   running the regular expression and its guards. The prefilter only ever lets too much through:
   literals are ASCII, and the four non-ASCII letters Python's case-insensitive matching equates
   with ASCII ones (U+0130, U+0131, U+017F, U+212A) are mapped to them first.
3. **Routing parts from the stored prediction.** A rule hit routes only inside the parts the
   prediction marked as routing (scoring.routing); those are read for the few candidates only.

Routing by rules = at least one routing hit of an enabled rule. The engine reports each message
whose routing by rules differs, with the hits that make the difference.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from re import _constants as sre_constants  # the parser's opcodes (Python 3.11)
from re import _parser as sre_parse

from scoring.rules import _FOLD, CompiledRules, RuleHit, RuleSpec, compile_rule, iter_hits

# The non-ASCII characters that re.IGNORECASE matches with an ASCII letter (checked against re
# over the whole Basic Multilingual Plane by tests/scoring/test_backtest.py).
ASCII_CASE_TWINS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})

_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT}


# --- The literal prefilter ------------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    text: str

    def ok(self, haystack: str) -> bool:
        return self.text in haystack


@dataclass(frozen=True)
class AllOf:
    parts: tuple[Requirement, ...]

    def ok(self, haystack: str) -> bool:
        return all(part.ok(haystack) for part in self.parts)


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[Requirement, ...]

    def ok(self, haystack: str) -> bool:
        return any(part.ok(haystack) for part in self.parts)


Requirement = Literal | AllOf | AnyOf


def _source(requirement: Requirement) -> str:
    if isinstance(requirement, Literal):
        return f"({requirement.text!r} in t)"
    joiner = " and " if isinstance(requirement, AllOf) else " or "
    return "(" + joiner.join(_source(part) for part in requirement.parts) + ")"


def predicate(requirement: Requirement | None) -> Callable[[str], bool] | None:
    """`requirement.ok` as one Python function of substring tests (about five times faster than
    walking the tree for every message). The source holds only repr()'d string literals."""
    if requirement is None:
        return None
    return eval(f"lambda t: {_source(requirement)}", {"__builtins__": {}})  # noqa: S307


def _all_of(parts: list[Requirement | None]) -> Requirement | None:
    kept = tuple(p for p in parts if p is not None)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else AllOf(kept)


def _any_of(parts: list[Requirement | None]) -> Requirement | None:
    if not parts or any(p is None for p in parts):
        return None  # one alternative needs nothing: the whole needs nothing
    return parts[0] if len(parts) == 1 else AnyOf(tuple(parts))


def _literal(chars: list[str]) -> Requirement | None:
    text = "".join(chars).lower()
    return Literal(text) if text and text.isascii() else None


def _sequence(items: Iterable[tuple]) -> Requirement | None:
    """What a sequence of parsed items requires: the AND of its parts' requirements, with runs
    of literal characters joined into one literal."""
    parts: list[Requirement | None] = []
    run: list[str] = []
    for op, av in items:
        if op is sre_constants.LITERAL:
            run.append(chr(av))
            continue
        if op is sre_constants.IN and len(av) == 1 and av[0][0] is sre_constants.LITERAL:
            run.append(chr(av[0][1]))  # a one-character class, e.g. [-]
            continue
        parts.append(_literal(run))
        run = []
        if op is sre_constants.SUBPATTERN:
            parts.append(_sequence(av[-1]))
        elif op is sre_constants.ATOMIC_GROUP:
            parts.append(_sequence(av))
        elif op in _REPEATS:
            low, _high, body = av
            if low >= 1:
                parts.append(_sequence(body))
        elif op is sre_constants.BRANCH:
            parts.append(_any_of([_sequence(branch) for branch in av[1]]))
        # anything else (classes, anchors, look-arounds, back-references) requires nothing
    parts.append(_literal(run))
    return _all_of(parts)


def required(pattern: str) -> Requirement | None:
    """The literals any match of `pattern` contains (lower-case, ASCII), or None when nothing
    can be said (then every message is a candidate)."""
    return _sequence(sre_parse.parse(pattern, re.IGNORECASE))


def context_required(terms: Sequence[str]) -> Requirement | None:
    """One of the context terms must occur: each term's words (a trailing * is a prefix)."""
    options: list[Requirement | None] = []
    for term in terms:
        words = term.strip().rstrip("*").split()
        options.append(_all_of([_literal(list(word)) for word in words]))
    return _any_of(options) if options else None


def rule_required(spec: RuleSpec) -> Requirement | None:
    """The prefilter of one rule: its pattern's literals and, for a context rule, a context term."""
    return _all_of([required(spec.pattern), context_required(spec.context_terms)])


def prefilter_text(text: str) -> str:
    """The text as the prefilter reads it: folded as the rules fold it, the case twins mapped to
    ASCII, lower-cased (both tables map non-ASCII characters only)."""
    if text.isascii():
        return text.lower()
    return text.translate(_FOLD).translate(ASCII_CASE_TWINS).lower()


# --- Comparing two rule sets ---------------------------------------------------------------------


def rule_key(spec: RuleSpec) -> tuple:
    """What decides a rule's hits (not its id or version)."""
    return (
        spec.code,
        spec.claim_type,
        spec.pattern,
        tuple(spec.context_terms),
        spec.context_window,
        spec.negation_guard,
    )


@dataclass(frozen=True)
class _Rule:
    compiled: CompiledRules  # this one rule
    requirement: Requirement | None
    code: str
    passes: Callable[[str], bool] | None = None  # the requirement, compiled (None: always)


def _prepared(specs: Iterable[RuleSpec], *, sign: int) -> tuple[_Rule, ...]:
    """Each rule compiled alone, with an id of the engine's own (positive: the active set's,
    negative: the draft's), so that hits tell which side found them whatever the callers' ids."""
    rules = []
    for number, spec in enumerate(specs, start=1):
        spec = dataclasses.replace(spec, rule_id=sign * number)
        compiled = compile_rule(spec)
        one = CompiledRules(rules=(compiled,), versions=frozenset({spec.rule_set_version}))
        requirement = rule_required(spec)
        rules.append(_Rule(one, requirement, spec.code, predicate(requirement)))
    return tuple(rules)


@dataclass(frozen=True)
class RuleDiff:
    """The rules of the active set the draft changes or drops, the draft's new or changed rules,
    and the rules both share."""

    active_only: tuple[_Rule, ...]
    draft_only: tuple[_Rule, ...]
    shared: tuple[_Rule, ...]

    @property
    def changed_codes(self) -> dict[str, list[str]]:
        active = {r.code for r in self.active_only}
        draft = {r.code for r in self.draft_only}
        return {
            "added": sorted(draft - active),
            "removed": sorted(active - draft),
            "changed": sorted(active & draft),
        }


def rule_diff(active: Sequence[RuleSpec], draft: Sequence[RuleSpec]) -> RuleDiff:
    """Compare the enabled rules of two sets."""
    active_keys = {rule_key(s) for s in active}
    draft_keys = {rule_key(s) for s in draft}
    return RuleDiff(
        active_only=_prepared((s for s in active if rule_key(s) not in draft_keys), sign=1),
        draft_only=_prepared((s for s in draft if rule_key(s) not in active_keys), sign=-1),
        shared=_prepared((s for s in draft if rule_key(s) in active_keys), sign=-1),
    )


@dataclass(frozen=True)
class Change:
    """A message whose routing by rules the draft changes: "added" (the draft routes it, the active
    rules do not) or "removed", with the routing hits that make the difference."""

    message_id: int
    kind: str
    hits: tuple[RuleHit, ...]


@dataclass
class ScanCounts:
    """How much work the scan did (for the benchmark and the progress line)."""

    messages: int = 0
    candidates: int = 0
    full_matches: int = 0
    by_kind: dict[str, int] = field(default_factory=lambda: {"added": 0, "removed": 0})


def _routing(hits: list[RuleHit], segments: Sequence[Mapping] | None) -> list[RuleHit]:
    """The hits inside a routing part (stored segments with `routes`); all hits without parts."""
    if not hits or not segments:
        return hits
    spans = [(s["start"], s["end"]) for s in segments if s.get("routes")]
    return [h for h in hits if any(start <= h.start and h.end <= end for start, end in spans)]


def _passing(rules: Iterable[_Rule], low: str) -> list[_Rule]:
    return [r for r in rules if r.passes is None or r.passes(low)]


def _routes(rules: Sequence[_Rule], body: str, segments, cache: dict) -> bool:
    """Whether any of `rules` has a routing hit, stopping at the first."""
    if not rules:
        return False
    compiled = CompiledRules(rules=tuple(r.compiled.rules[0] for r in rules))
    spans = [(s["start"], s["end"]) for s in segments if s.get("routes")] if segments else None
    for hit in iter_hits(body, compiled, cache=cache):
        if spans is None or any(start <= hit.start and hit.end <= end for start, end in spans):
            return True
    return False


def _hits(rules: Sequence[_Rule], body: str, segments, cache: dict) -> dict[int, list[RuleHit]]:
    """Routing hits of `rules` on `body` by rule id (one word index for all of them)."""
    if not rules:
        return {}
    compiled = CompiledRules(rules=tuple(r.compiled.rules[0] for r in rules))
    by_rule: dict[int, list[RuleHit]] = {}
    for hit in _routing(list(iter_hits(body, compiled, cache=cache)), segments):
        by_rule.setdefault(hit.rule_id, []).append(hit)
    return by_rule


def scan(
    rows: Iterable[tuple[int, str]],
    diff: RuleDiff,
    *,
    segments_of: Callable[[list[int]], Mapping[int, Sequence[Mapping] | None]],
    counts: ScanCounts | None = None,
) -> list[Change]:
    """The changes among `rows` ((message id, body), one chunk at a time). `segments_of(ids)` gives
    the stored routing parts of the candidate messages (one call per chunk)."""
    counts = counts if counts is not None else ScanCounts()
    candidates: list[tuple[int, str, str, list[_Rule]]] = []
    for message_id, body in rows:
        counts.messages += 1
        low = prefilter_text(body)
        changed = _passing(diff.active_only, low) + _passing(diff.draft_only, low)
        if changed:
            candidates.append((message_id, body, low, changed))
    if not candidates:
        return []
    counts.candidates += len(candidates)
    segments = segments_of([c[0] for c in candidates])
    active_ids = {r.compiled.rules[0].spec.rule_id for r in diff.active_only}
    changes = []
    for message_id, body, low, changed in candidates:
        counts.full_matches += 1
        parts = segments.get(message_id)
        cache: dict = {}
        hits = _hits(changed, body, parts, cache)
        active_hits = [h for rule_id, found in hits.items() if rule_id in active_ids for h in found]
        draft_hits = [h for rule_id, found in hits.items() if rule_id not in active_ids for h in found]
        if bool(active_hits) == bool(draft_hits):
            continue
        if _routes(_passing(diff.shared, low), body, parts, cache):
            continue  # an unchanged rule routes it under both sets
        kind = "added" if draft_hits else "removed"
        counts.by_kind[kind] += 1
        found = sorted(draft_hits or active_hits, key=lambda h: (h.start, h.end, h.code))
        changes.append(Change(message_id, kind, tuple(found)))
    return changes
