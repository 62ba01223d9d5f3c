"""The rule backtest's engine, pure (no Django): which stored messages a draft rule set would route
that the active rules do not, and the reverse, fast enough for a million messages.

These ideas make it fast (bench_rules --backtest measures them):

1. **Only what changed is matched.** A rule with the same code, claim type, pattern, context terms,
   window and negation guard in both sets finds the same hits in both, so it cannot change a
   message's routing on its own; nor can an edit of the window of a rule without context terms
   (the window is never read then). Every message is checked against the changed rules only
   (those of the active set that the draft changes or drops, and those of the draft that are new
   or changed); the unchanged rules are matched only on a message a changed rule hit, to learn
   whether it is routed by rules anyway.
2. **A literal prefilter before the full match.** From each changed rule's regular expression the
   engine derives the literal text any match must contain (`required`: an AND/OR of literals from
   the parsed pattern, as code-search prefilters do; a context rule also needs one of its context
   terms), and checks it with substring search (C speed) on the folded, lower-cased text before
   running the regular expression and its guards. Its substring searches run in the order that
   decides soonest on the texts being scanned (measured on the first of them: in an AND the
   literal they least often hold first, in an OR the one they most often hold): on the
   benchmark's office prose the rules' tests then take 40 % of the time, the combined one 25 %.
   The prefilter only ever lets too much through: literals are ASCII, and the four non-ASCII
   letters Python's case-insensitive matching equates with ASCII ones (U+0130, U+0131, U+017F,
   U+212A) are mapped to them first.
3. **Routing parts from the stored prediction.** A rule hit routes only inside the parts the
   prediction marked as routing (scoring.routing); those are read for the few candidates only.
4. **The regular expression runs only where a match can start.** From the parsed pattern, the
   literals every match starts with (`anchors`); on an ASCII text the expression is tried
   (`regex.match(text, i)`) only where one occurs in the lower-cased text, which finds exactly the
   matches `finditer` finds (tests/scoring/test_backtest.py checks it on the corpus).
5. **What two rules share is done once per message.** A pattern both sides have (a rule the draft
   edits only in its guards) is searched once; the words around a match, its negation check and
   its context verdicts (a term within a window is within any wider one) are shared by the rules
   that found it (scoring.rules indexes only the words around a match); equal prefilters are
   evaluated once.
6. **A message both sets route stops at the first pair that shows it.** The changed rules are
   tried pattern by pattern (a rule and its edited copy together), the patterns that most often
   decided a message first, each rule's prefilter checked only when it is reached; as soon as
   both sides have a routing hit the message cannot change and the rest is skipped.
7. **Two processes for a large backtest.** With a helper (scoring.backtest_helper, a subprocess),
   a share of each chunk's rows is sent there first and prefiltered and matched there while this
   process does the rest and reads the next chunk; the share follows which of the two waited
   for the other, so that neither idles.

Routing by rules = at least one routing hit of an enabled rule. The engine reports each message
whose routing by rules differs, with the hits that make the difference.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from re import _constants as sre_constants  # the parser's opcodes (Python 3.11)
from re import _parser as sre_parse
from typing import Any

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


def literals(requirement: Requirement | None) -> set[str]:
    """Every literal a requirement tests."""
    if requirement is None:
        return set()
    if isinstance(requirement, Literal):
        return {requirement.text}
    return set().union(*(literals(part) for part in requirement.parts))


def literal_odds(requirements: Iterable[Requirement | None], texts: Sequence[str]) -> dict[str, float]:
    """The share of `texts` (prefilter texts) that hold each literal of `requirements`."""
    wanted = set().union(*(literals(r) for r in requirements))
    count = max(len(texts), 1)
    return {text: sum(text in t for t in texts) / count for text in wanted}


def _odds(requirement: Requirement, odds: Mapping[str, float]) -> float:
    """The estimated share of texts that pass (the parts taken as independent)."""
    if isinstance(requirement, Literal):
        return odds.get(requirement.text, 1.0)
    shares = [_odds(part, odds) for part in requirement.parts]
    if isinstance(requirement, AllOf):
        return math.prod(shares)
    return 1.0 - math.prod(1.0 - share for share in shares)


def _flat(requirement: AllOf | AnyOf) -> list[Requirement]:
    """The parts of a node with the parts of its children of the same kind pulled up."""
    parts: list[Requirement] = []
    for part in requirement.parts:
        parts += _flat(part) if type(part) is type(requirement) else [part]
    return parts


def _source(requirement: Requirement, odds: Mapping[str, float] | None = None) -> str:
    if isinstance(requirement, Literal):
        return f"({requirement.text!r} in t)"
    parts = _flat(requirement)
    if odds is not None:
        # the test most likely to decide first: in an AND the part texts least often pass, in an
        # OR the one they most often pass (ties: the one with fewer substring searches)
        sign = 1.0 if isinstance(requirement, AllOf) else -1.0
        parts.sort(key=lambda part: (sign * _odds(part, odds), len(literals(part))))
    joiner = " and " if isinstance(requirement, AllOf) else " or "
    return "(" + joiner.join(_source(part, odds) for part in parts) + ")"


def predicate(
    requirement: Requirement | None, odds: Mapping[str, float] | None = None
) -> Callable[[str], bool] | None:
    """`requirement.ok` as one Python function of substring tests (about five times faster than
    walking the tree for every message). With `odds` (literal_odds of texts like those to be
    tested), the parts are tested in the order that decides soonest on such texts: the same
    verdicts in a fraction of the searches (module docstring, item 2). The source
    holds only repr()'d string literals."""
    if requirement is None:
        return None
    return _compiled_predicate(_source(requirement, odds))


@functools.lru_cache(maxsize=1024)
def _compiled_predicate(source: str) -> Callable[[str], bool]:
    """One function per distinct prefilter, so that equal prefilters are one object (the scan
    checks each once per message)."""
    return eval(f"lambda t: {source}", {"__builtins__": {}})  # noqa: S307


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


# --- Where a match can start ---------------------------------------------------------------------

_ZERO_WIDTH = {sre_constants.AT, sre_constants.ASSERT, sre_constants.ASSERT_NOT}
_MAX_ANCHORS = 64


def _first_of_item(op, av) -> tuple[frozenset[str] | None, bool]:
    """(the literals a match of one parsed item starts with, whether it can match empty)."""
    if op in _ZERO_WIDTH:
        return frozenset(), True
    if op is sre_constants.IN and av and all(kind is sre_constants.LITERAL for kind, _ in av):
        return frozenset(chr(code) for _, code in av), False
    if op is sre_constants.SUBPATTERN:
        return _first_of_sequence(av[-1])
    if op is sre_constants.ATOMIC_GROUP:
        return _first_of_sequence(av)
    if op in _REPEATS:
        low, _high, body = av
        first, empty = _first_of_sequence(body)
        return first, empty or low == 0
    if op is sre_constants.BRANCH:
        found: set[str] = set()
        empty = False
        for branch in av[1]:
            first, branch_empty = _first_of_sequence(branch)
            if first is None:
                return None, True
            found |= first
            empty = empty or branch_empty
        return frozenset(found), empty
    return None, True  # a class, a category, any character, a back-reference: could start anywhere


def _first_of_sequence(items) -> tuple[frozenset[str] | None, bool]:
    found: set[str] = set()
    items = list(items)
    for position, (op, av) in enumerate(items):
        if op is sre_constants.LITERAL:
            run = []
            for next_op, next_av in items[position:]:
                if next_op is not sre_constants.LITERAL:
                    break
                run.append(chr(next_av))
            return frozenset(found | {"".join(run)}), False
        first, empty = _first_of_item(op, av)
        if first is None:
            return None, True
        found |= first
        if not empty:
            return frozenset(found), False
    return frozenset(found), True


def anchors(pattern: str) -> tuple[str, ...] | None:
    """The literals (lower-case, ASCII) one of which every match of `pattern` starts with, or None
    when that cannot be said (a match could start with a class, or be empty). On an ASCII text,
    the regular expression then needs trying only where one of them occurs in the lower-cased
    text, not at every position as a whole-text search does."""
    first, empty = _first_of_sequence(sre_parse.parse(pattern, re.IGNORECASE))
    if first is None or empty or not first or len(first) > _MAX_ANCHORS:
        return None
    lowered = {text.lower() for text in first}
    if not all(text and text.isascii() and len(text) == len(text.lower()) for text in lowered):
        return None
    # a shorter anchor that starts a longer one finds every position the longer one does
    kept = sorted(lowered, key=len)
    kept = [a for i, a in enumerate(kept) if not any(a.startswith(b) for b in kept[:i])]
    return tuple(sorted(kept))


def anchored_matches(regex: re.Pattern[str], starts: tuple[str, ...] | None, text: str, low: str | None):
    """`regex.finditer(text)`, the same matches in the same order, trying the expression only where
    an anchor occurs in `low` (`text` lower-cased, same length; None: search the whole text).
    `regex.match(text, i)` reads the characters before i for \\b and look-behinds as a search does."""
    if starts is None or low is None:
        return list(regex.finditer(text))
    positions: set[int] = set()
    for anchor in starts:
        at = low.find(anchor)
        while at != -1:
            positions.add(at)
            at = low.find(anchor, at + 1)
    found = []
    end = 0
    for at in sorted(positions):
        if at < end:
            continue
        m = regex.match(text, at)
        if m is None:
            continue
        if m.end() == at:  # an empty match: finditer's own stepping rules apply
            return list(regex.finditer(text))
        found.append(m)
        end = m.end()
    return found


# --- Comparing two rule sets ---------------------------------------------------------------------

ODDS_SAMPLE = 256  # texts that order a diff's prefilter tests (RuleDiff.tuned)


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


def _effective_key(spec: RuleSpec) -> tuple:
    """`rule_key` less what cannot change a hit: the context window of a rule without context
    terms is never read (iter_hits looks `NEGATION_WINDOW` words back for the negation guard
    whatever the window), so a draft that edits only that window changes nothing the scan could
    find; the rule is matched as a shared one."""
    key = rule_key(spec)
    return key if spec.context_terms else (*key[:4], None, *key[5:])


@dataclass(frozen=True)
class _Rule:
    compiled: CompiledRules  # this one rule
    requirement: Requirement | None
    code: str
    passes: Callable[[str], bool] | None = None  # the requirement, compiled (None: always)
    starts: tuple[str, ...] | None = None  # anchors(pattern)


def _prepared(specs: Iterable[RuleSpec], *, sign: int) -> tuple[_Rule, ...]:
    """Each rule compiled alone, with an id of the engine's own (positive: the active set's,
    negative: the draft's), so that hits tell which side found them whatever the callers' ids."""
    rules = []
    for number, spec in enumerate(specs, start=1):
        spec = dataclasses.replace(spec, rule_id=sign * number)
        compiled = compile_rule(spec)
        one = CompiledRules(rules=(compiled,), versions=frozenset({spec.rule_set_version}))
        requirement = rule_required(spec)
        rules.append(_Rule(one, requirement, spec.code, predicate(requirement), anchors(spec.pattern)))
    return tuple(rules)


@dataclass(frozen=True)
class RuleDiff:
    """The rules of the active set the draft changes or drops, the draft's new or changed rules,
    and the rules both share."""

    active_only: tuple[_Rule, ...]
    draft_only: tuple[_Rule, ...]
    shared: tuple[_Rule, ...]
    edited: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())  # codes, by rule_key
    odds: Mapping[str, float] | None = field(default=None, compare=False)  # see tuned()

    def tuned(self, texts: Sequence[str]) -> RuleDiff:
        """This diff with its prefilter tests ordered by how often each literal occurs in the first
        `ODDS_SAMPLE` of `texts` (prefilter texts), made once, from the first texts a diff is
        tuned on (a scan tunes its diff on its first rows): what a message passes is unchanged,
        only the order of the substring searches that tell it. No texts: left as it is for now."""
        if self.odds is not None or not texts:
            return self
        tuned = self.__dict__.get("_tuned")  # a frozen dataclass: cached as cached_property does
        if tuned is None:
            rules = (*self.active_only, *self.draft_only, *self.shared)
            odds = literal_odds((r.requirement for r in rules), texts[:ODDS_SAMPLE])

            def retuned(group: tuple[_Rule, ...]) -> tuple[_Rule, ...]:
                return tuple(dataclasses.replace(r, passes=predicate(r.requirement, odds)) for r in group)

            tuned = self.__dict__["_tuned"] = dataclasses.replace(
                self,
                active_only=retuned(self.active_only),
                draft_only=retuned(self.draft_only),
                shared=retuned(self.shared),
                odds=odds,
            )
        return tuned

    @property
    def starts(self) -> dict[str, tuple[str, ...] | None]:
        """Each pattern's anchors (a pattern both sides share is searched once per message)."""
        return {
            r.compiled.rules[0].spec.pattern: r.starts
            for r in (*self.active_only, *self.draft_only, *self.shared)
        }

    @functools.cached_property
    def changed(self) -> tuple[_Rule, ...]:
        """The changed rules of both sides, each draft rule right after the active rule with the
        same pattern (an edit of its guards), so that a message both sides route is known as soon
        as one pair of rules has hit it (see scan)."""
        ordered: list[_Rule] = []
        pending = list(self.draft_only)
        for rule in self.active_only:
            ordered.append(rule)
            pattern = rule.compiled.rules[0].spec.pattern
            twins = [d for d in pending if d.compiled.rules[0].spec.pattern == pattern]
            ordered += twins
            pending = [d for d in pending if d not in twins]
        return (*ordered, *pending)

    @functools.cached_property
    def candidate(self) -> Callable[[str], bool] | None:
        """Whether a message (its prefilter text) passes the prefilter of any changed rule: one
        function for all of them (None: every message does)."""
        return predicate(_any_of(list(dict.fromkeys(r.requirement for r in self.changed))), self.odds)

    @property
    def changed_codes(self) -> dict[str, list[str]]:
        """The codes the draft adds, removes and changes, as edited (by `rule_key`: an edit that
        cannot change a hit, which the scan treats as shared, is still an edit)."""
        active, draft = self.edited
        return {
            "added": sorted(draft - active),
            "removed": sorted(active - draft),
            "changed": sorted(active & draft),
        }


def rule_diff(active: Sequence[RuleSpec], draft: Sequence[RuleSpec]) -> RuleDiff:
    """Compare the enabled rules of two sets: a rule is changed when it can hit differently
    (`_effective_key`)."""
    active_keys = {_effective_key(s) for s in active}
    draft_keys = {_effective_key(s) for s in draft}
    edited_active = {rule_key(s) for s in active}
    edited_draft = {rule_key(s) for s in draft}
    return RuleDiff(
        active_only=_prepared((s for s in active if _effective_key(s) not in draft_keys), sign=1),
        draft_only=_prepared((s for s in draft if _effective_key(s) not in active_keys), sign=-1),
        shared=_prepared((s for s in draft if _effective_key(s) in active_keys), sign=-1),
        edited=(
            frozenset(s.code for s in active if rule_key(s) not in edited_draft),
            frozenset(s.code for s in draft if rule_key(s) not in edited_active),
        ),
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


def _passes(rule: _Rule, low: str, seen: dict) -> bool:
    """Whether `low` passes the rule's prefilter; `seen` shares the verdicts of equal prefilters (a
    rule and its edited copy often have the same literals)."""
    if rule.passes is None:
        return True
    verdict = seen.get(rule.passes)
    if verdict is None:
        verdict = seen[rule.passes] = rule.passes(low)
    return verdict


class _Finder:
    """The regular-expression matches of one text, found once per pattern (a rule the draft changes
    only in its guards has the same matches on both sides) and only where an anchor occurs. A rule
    whose prefilter the text fails has no matches: the prefilter is checked only for the rules
    the scan gets to (a message both sides route is decided by the first pair that hits it)."""

    def __init__(
        self,
        low: str | None,
        starts: Mapping[str, tuple[str, ...] | None],
        rules: Mapping[int, _Rule],
        prefiltered: str,
        seen: dict,
    ) -> None:
        self.low, self.starts, self.found = low, starts, {}
        self.rules, self.prefiltered, self.seen = rules, prefiltered, seen

    def __call__(self, rule, folded: str) -> Sequence[re.Match[str]]:
        if not _passes(self.rules[id(rule)], self.prefiltered, self.seen):
            return ()
        pattern = rule.spec.pattern
        if pattern not in self.found:
            self.found[pattern] = anchored_matches(rule.regex, self.starts.get(pattern), folded, self.low)
        return self.found[pattern]


def _routing_spans(segments) -> list[tuple[int, int]] | None:
    """The routing parts (stored segments with `routes`); None: the whole text routes."""
    return [(s["start"], s["end"]) for s in segments if s.get("routes")] if segments else None


def _routes(compiled: CompiledRules, body: str, spans, finder: _Finder, cache: dict) -> bool:
    """Whether any of `compiled` has a routing hit, stopping at the first."""
    for hit in iter_hits(body, compiled, finder=finder, cache=cache):
        if spans is None or any(start <= hit.start and hit.end <= end for start, end in spans):
            return True
    return False


def _side_hits(
    compiled: CompiledRules, body: str, spans, finder: _Finder, cache: dict
) -> tuple[list[RuleHit], list[RuleHit], RuleHit | None]:
    """The routing hits of `compiled` (changed rules of both sides, engine ids: positive for the
    active set's) on `body`, as (active, draft, None); as soon as both sides have one, since such
    a message routes under both sets, ([], [], the hit that showed it)."""
    active: list[RuleHit] = []
    draft: list[RuleHit] = []
    for hit in iter_hits(body, compiled, finder=finder, cache=cache):
        if spans is not None and not any(start <= hit.start and hit.end <= end for start, end in spans):
            continue
        (active if hit.rule_id > 0 else draft).append(hit)
        if active and draft:
            return [], [], hit
    return active, draft, None


class _Order:
    """The changed rules in the order the scan tries them: pattern by pattern (a rule and its edited
    copy together), the patterns that most often showed a message routed under both sets first,
    so that such a message costs one pattern search, not all of them. The order changes which
    rules are tried, never what a changed message reports (its hits are sorted)."""

    EVERY = 64  # candidates between two reorderings

    def __init__(self, rules: Sequence[_Rule]) -> None:
        self.groups: list[list[_Rule]] = []
        for rule in rules:
            if (
                self.groups
                and self.groups[-1][0].compiled.rules[0].spec.pattern == rule.compiled.rules[0].spec.pattern
            ):
                self.groups[-1].append(rule)
            else:
                self.groups.append([rule])
        self.wins: dict[str, int] = {}
        self.seen = 0
        self.compiled = self._compiled()

    def _compiled(self) -> CompiledRules:
        return CompiledRules(rules=tuple(r.compiled.rules[0] for group in self.groups for r in group))

    def decided(self, hit: RuleHit | None, pattern_of: Mapping[int, str]) -> None:
        if hit is not None:
            pattern = pattern_of[hit.rule_id]
            self.wins[pattern] = self.wins.get(pattern, 0) + 1
        self.seen += 1
        if self.seen % self.EVERY == 0:
            self.groups.sort(key=lambda g: -self.wins.get(g[0].compiled.rules[0].spec.pattern, 0))
            self.compiled = self._compiled()


def scan(
    rows: Iterable[tuple[int, str, Any]],
    diff: RuleDiff,
    *,
    counts: ScanCounts | None = None,
    helper=None,
) -> list[Change]:
    """The changes among `rows` ((message id, body, stored routing parts: a list, its JSON text, or
    None), one chunk at a time, in id order).

    With a `helper` (scoring.backtest_helper.ScanHelper, for the same two rule sets), the last
    `helper.share` of a chunk's rows are sent to the helper's process first, which prefilters and
    matches them while this one does the others and then reads the next chunk: their changes come
    back from the next call, and the last chunk's from `helper.collect(counts)`; the caller sorts
    the changes by id (the order they have without a helper)."""
    counts = counts if counts is not None else ScanCounts()
    changes = helper.collect(counts) if helper is not None else []
    rows = list(rows)
    keep = len(rows) if helper is None else len(rows) - round(len(rows) * helper.share)
    if keep < len(rows):
        helper.submit(rows[keep:])
    changes += scan_rows(rows[:keep], diff, counts)
    return changes


def scan_rows(rows: Sequence[tuple[int, str, Any]], diff: RuleDiff, counts: ScanCounts) -> list[Change]:
    """The changes among `rows` in this process: the prefilter, then the full match of the
    candidates (`scan` without a helper; scoring.backtest_helper runs it on its share)."""
    lows = [prefilter_text(body) for _message_id, body, _parts in rows]
    diff = diff.tuned(lows)
    passes = diff.candidate
    candidates: list[tuple[int, str, str, dict, Sequence[Mapping] | None]] = []
    for (message_id, body, parts), low in zip(rows, lows, strict=True):
        if passes is None or passes(low):
            stored = json.loads(parts) if isinstance(parts, str) else parts
            candidates.append((message_id, body, low, {}, stored))
    counts.messages += len(rows)
    counts.candidates += len(candidates)
    return _match(candidates, diff, counts) if candidates else []


def _match(
    candidates: Iterable[tuple[int, str, str, dict, Sequence[Mapping] | None]],
    diff: RuleDiff,
    counts: ScanCounts,
) -> list[Change]:
    starts = diff.starts
    rules = {id(r.compiled.rules[0]): r for r in (*diff.changed, *diff.shared)}
    pattern_of = {r.compiled.rules[0].spec.rule_id: r.compiled.rules[0].spec.pattern for r in diff.changed}
    shared = CompiledRules(rules=tuple(r.compiled.rules[0] for r in diff.shared))
    order = _Order(diff.changed)
    changes = []
    for message_id, body, low, seen, parts in candidates:
        counts.full_matches += 1
        spans = _routing_spans(parts)
        # anchors are found in the lower-cased text, which has the text's offsets when it is ASCII
        finder = _Finder(low if body.isascii() else None, starts, rules, low, seen)
        cache: dict = {}  # words around a match, and its negation check, shared by the rules
        active_hits, draft_hits, both = _side_hits(order.compiled, body, spans, finder, cache)
        order.decided(both, pattern_of)
        if not active_hits and not draft_hits:
            continue  # routed under both sets, or under neither
        if shared.rules and _routes(shared, body, spans, finder, cache):
            continue  # an unchanged rule routes it under both sets
        kind = "added" if draft_hits else "removed"
        counts.by_kind[kind] += 1
        # the order of the rules' own lists (by engine id) breaks ties, as it always has
        found = sorted(draft_hits or active_hits, key=lambda h: (h.start, h.end, h.code, abs(h.rule_id)))
        changes.append(Change(message_id, kind, tuple(found)))
    return changes
