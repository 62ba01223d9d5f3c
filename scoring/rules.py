"""The rule engine: cheap, high-precision phrase rules over message text. Pure Python, no Django.

A rule is a case-insensitive regular expression (`RuleSpec.pattern`) plus two guards:

- **context terms**: when a rule lists any, at least one of them must occur within
  `context_window` words before or after the match (the match itself does not count). A term is
  a literal word or phrase matched as whole words, case-insensitively; a trailing `*` makes it
  a prefix (`invest*` matches "invest", "investing", "investment"). This is what tells
  "risk-free investment" from "risk-free trial".
- **negation guard**: when set, a negation word (`NEGATIONS`) among the `NEGATION_WINDOW` words
  just before the match, within the same clause, suppresses the hit: "we cannot guarantee
  returns", "the fund is not approved by the SEC". The look-back stops at `.`, `!`, `?`, `;`,
  `:`, line breaks and commas, so "Don't worry, your returns are guaranteed." and "No, returns
  are guaranteed." are hits; a comma right after a negating verb does not end the clause, so
  "we do not, and cannot, guarantee returns" stays negated (an interjection such as "No," or
  "none," does). A negation *inside* the match is the pattern's business: "no risk" is a
  claim, so patterns decide for themselves. The same guard also suppresses a hit that is
  **asked** (its sentence ends with a question mark: "is the income guaranteed?" is a client's
  question, not a promise), **quoted** (it lies inside quotation marks on its line, double or
  single: a warning about offers of "guaranteed 20% a month", a client asking whether a fund is
  "FCA approved", a scam text forwarded as 'your money is 100% safe'; an apostrophe inside a word
  quotes nothing) or
  **reported** (a reporting word such as "told", "claimed", "advertising", "promising", or the
  "whether" of an indirect question, among the words just before it, in its clause: "my last
  adviser told me the fund was risk free", "schemes advertising guaranteed high yields are
  frauds", "you asked whether we could guarantee an income"): words mentioned are not words used.

Rules are deliberately a net with small holes: they catch the plain phrasings and miss the
euphemisms ("your principal is bulletproof"), which is exactly the signal the monitoring of
"model flags no rule explains" needs.

Matching is linear in the text for the seeded patterns: each compiled pattern scans the text
once, and the word index used by the guards is built once per text, only when a guarded rule
has matched.
"""

from __future__ import annotations

import bisect
import itertools
import re
import re._constants as _sre_constants  # the parsed form of a pattern, for nested_repeat
import re._parser as _sre
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

# Words that negate what follows. Curly apostrophes are folded to ' before matching.
NEGATIONS: frozenset[str] = frozenset(
    {
        "not",
        "no",
        "never",
        "cannot",
        "can't",
        "cant",
        "isn't",
        "aren't",
        "won't",
        "wont",
        "wasn't",
        "weren't",
        "don't",
        "doesn't",
        "didn't",
        "shouldn't",
        "couldn't",
        "wouldn't",
        "nor",
        "neither",
        "without",
        "none",
        "nothing",
        "hardly",
    }
)
# Words that report someone else's words: a hit right after one is mentioned, not made. "said" and
# "says" are left out on purpose: "as I said, returns are guaranteed" is the sender's own claim.
REPORTING: frozenset[str] = frozenset(
    {
        "told",
        "tells",
        "claim",
        "claims",
        "claimed",
        "claiming",
        "advertise",
        "advertises",
        "advertised",
        "advertising",
        "promising",
        "alleged",
        "allegedly",
        "supposedly",
        "so-called",
        # an indirect question: "you asked whether we could guarantee an income", "whether the
        # SEC has approved it" is what is asked, not said
        "whether",
    }
)
# How many words before a match the negation guard looks at (within the same clause). Seven, not
# five: "there isn't an investment that is truly risk-free", "nor does it imply that the SEC has
# approved" put the negation six words back. Measured on the corpus's val and test splits and the
# development sets (3,652 messages, 1,174 claims): no claim lost a hit, 11 innocent messages did.
NEGATION_WINDOW = 7
# Characters that end a clause for the negation look-back; a comma ends one too, except right
# after a negating verb ("we do not, and cannot, guarantee"): see _negated.
_CLAUSE_END = re.compile(r"[.!?;:\n]")
_COMMA = re.compile(r",")
# Negation words that stand alone before a comma ("No, returns are guaranteed."): the comma
# closes them off from what follows.
_INTERJECTIONS: frozenset[str] = frozenset({"no", "none", "nothing", "nope", "nah"})
_SENTENCE_END = re.compile(r"[.!?\n]")
# Double quotation marks (curly ones are folded to straight ones first: see _FOLD).
_QUOTE = '"'
# Single quotation marks (curly ones folded too) open a quote where no word precedes them and one
# follows ("warned about 'guaranteed returns'"), and close one where a word, a figure or a full
# stop precedes them and no word follows; an apostrophe inside a word ("can't") is neither.
_SINGLE_OPEN = re.compile(r"(?<![\w'])'(?=[\w$\u00a3\u20ac])")
_SINGLE_CLOSE = re.compile(r"(?<=[\w.!?%)])'(?![\w'])")
# A word for the guards: letters/digits with inner apostrophes or hyphens ("can't", "risk-free").
_WORD = re.compile(r"\w+(?:['\-]\w+)*")
_WORD_SPLIT = re.compile(r"(\w+(?:['\-]\w+)*)")  # _WORD, kept by re.split
# Same-length folding so that offsets into the folded text are offsets into the original.
_FOLD = str.maketrans(
    {
        "\u2019": "'",
        "\u2018": "'",
        "\u2010": "-",
        "\u2011": "-",
        "\u2013": "-",
        "\u201c": '"',
        "\u201d": '"',
        "\u00ab": '"',
        "\u00bb": '"',
    }
)


class RuleError(ValueError):
    """A rule that cannot be compiled or is malformed; the message names the rule."""


@dataclass(frozen=True)
class RuleSpec:
    """A rule as the engine sees it (a Rule row flattened, or a rule being validated)."""

    rule_id: int
    code: str
    rule_set_version: int
    claim_type: str
    pattern: str
    context_terms: tuple[str, ...] = ()
    context_window: int = 8
    negation_guard: bool = True


@dataclass(frozen=True)
class RuleHit:
    """One match: which rule (id, code, rule-set version), its claim type, and the character
    span `[start, end)` into the original text with the matched text."""

    rule_id: int
    code: str
    rule_set_version: int
    claim_type: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class _CompiledRule:
    spec: RuleSpec
    regex: re.Pattern[str]
    context: re.Pattern[str] | None


@dataclass(frozen=True)
class CompiledRules:
    """Rules with their patterns compiled once; reuse it for every message."""

    rules: tuple[_CompiledRule, ...] = ()
    versions: frozenset[int] = field(default_factory=frozenset)

    def __len__(self) -> int:
        return len(self.rules)


def _describe(spec: RuleSpec) -> str:
    return f"Rule {spec.code} (id {spec.rule_id}, rule set v{spec.rule_set_version})"


def _context_regex(spec: RuleSpec) -> re.Pattern[str] | None:
    """One alternation of the terms, `\bterm...`. It starts with a look-ahead for the terms' first
    letters: every alternative starts with one of them (a class matches, case-insensitively, the
    characters its letter does), so it finds the same matches, but the search skips a position
    that starts no term without trying every alternative there (about 40 % faster on the seeded
    rules' terms)."""
    parts = []
    firsts = set()
    for raw in spec.context_terms:
        term = raw.strip() if isinstance(raw, str) else ""
        if not term or term == "*":
            raise RuleError(f"{_describe(spec)}: context term {raw!r} is empty.")
        prefix = term.endswith("*")
        words = term.rstrip("*").split()
        firsts.add(words[0][0] if words else "")  # "**": a prefix of nothing starts anywhere
        body = r"\s+".join(re.escape(word) for word in words)
        parts.append(rf"\b{body}" + (r"[\w'\-]*" if prefix else r"\b"))
    if not parts:
        return None
    ahead = "" if "" in firsts else "(?=[" + "".join(re.escape(char) for char in sorted(firsts)) + "])"
    return re.compile(ahead + "(?:" + "|".join(parts) + ")", re.IGNORECASE)


def compile_rule(spec: RuleSpec) -> _CompiledRule:
    """Compile one rule, raising RuleError (naming the rule) for anything malformed."""
    if not isinstance(spec.pattern, str) or not spec.pattern.strip():
        raise RuleError(f"{_describe(spec)}: the pattern is empty.")
    try:
        regex = re.compile(spec.pattern, re.IGNORECASE)
    except re.error as exc:
        raise RuleError(f"{_describe(spec)}: invalid pattern {spec.pattern!r}: {exc}.") from exc
    if regex.search("") is not None:
        # A pattern that matches nothing at all would "hit" at every position of every message.
        raise RuleError(f"{_describe(spec)}: pattern {spec.pattern!r} matches the empty text.")
    if not isinstance(spec.context_window, int) or spec.context_window < 1:
        raise RuleError(f"{_describe(spec)}: context window must be a whole number of words >= 1.")
    return _CompiledRule(spec=spec, regex=regex, context=_context_regex(spec))


# A repeat of more than this many may not hold another repeat (a nested quantifier). The seeded
# rules repeat a group of words at most {0,3} times.
NESTED_REPEAT_LIMIT = 10


def _children(av: object) -> Iterator[_sre.SubPattern]:
    """The sub-patterns inside one parsed node's argument (a group's body, a repeat's body, the
    branches of an alternation, an assertion's body); character sets and literals have none."""
    if isinstance(av, _sre.SubPattern):
        yield av
    elif isinstance(av, tuple | list):
        for item in av:
            yield from _children(item)


def _repeats(items: _sre.SubPattern, limit: int) -> Iterator[tuple[int, int, _sre.SubPattern]]:
    """Every repeat (min, max, body) in a parsed pattern whose max is above `limit`, at any depth.
    A possessive repeat (`*+`, `++`) never gives back what it matched, so it is not one."""
    for op, av in items:
        if op in (_sre_constants.MAX_REPEAT, _sre_constants.MIN_REPEAT) and av[1] > limit:
            yield av
        for child in _children(av):
            yield from _repeats(child, limit)


def nested_repeat(pattern: str) -> str | None:
    """Why a pattern risks catastrophic backtracking, or None: a group repeated more than
    NESTED_REPEAT_LIMIT times that holds a repeat of its own, such as `(a+)+` or `(\\w+\\s?)*`.
    On a text that almost matches, Python's `re` (which has no time limit) then tries every way
    of splitting the text between the two repeats: exponentially many. A check of the pattern's
    shape, not a proof: an alternation whose branches overlap, `(a|a)+`, also backtracks and is
    not found here. The pattern must compile."""
    tree = _sre.parse(pattern, re.IGNORECASE)
    for _, hi, body in _repeats(tree, NESTED_REPEAT_LIMIT):
        if next(_repeats(body, 1), None) is not None:
            outer = "unbounded" if hi == _sre_constants.MAXREPEAT else f"up to {hi} times"
            return (
                f"it repeats ({outer}) a part that itself repeats, so on a text that almost "
                "matches, matching can take longer than any message may (catastrophic "
                f"backtracking): repeat the outer part at most {NESTED_REPEAT_LIMIT} times "
                "({0,3}) or make it possessive (++, *+)"
            )
    return None


def compile_rules(specs: Iterable[RuleSpec]) -> CompiledRules:
    """Compile every rule once (case-insensitive). Raises RuleError naming the first bad rule."""
    compiled = tuple(compile_rule(spec) for spec in specs)
    return CompiledRules(rules=compiled, versions=frozenset(r.spec.rule_set_version for r in compiled))


class _WordIndex:
    """Word spans of one text, or of the stretch [lo, hi) of it, for the context and negation
    windows. `lo` and `hi` lie next to a character no word holds (or at the ends of the text), so
    the stretch's words are the whole text's words there (see _around)."""

    def __init__(self, text: str, lo: int = 0, hi: int | None = None) -> None:
        self.text, self.lo, self.hi = text, lo, len(text) if hi is None else hi
        # The stretch split around its words (gap, word, gap, ..., gap) and the pieces' lengths
        # summed from `lo`: every other sum is a word's start, the next its end. The same spans
        # as _WORD.finditer, found in C (about three times faster than a Python loop over matches).
        bounds = list(itertools.accumulate(map(len, _WORD_SPLIT.split(text[lo : self.hi])), initial=lo))
        self.starts: list[int] = bounds[1:-1:2]
        self.ends: list[int] = bounds[2:-1:2]

    def word(self, j: int) -> str:
        """The j-th word, lower-cased (the guards read a few words near a match, so words are
        not lower-cased up front: that was most of the index's cost on long texts)."""
        return self.text[self.starts[j] : self.ends[j]].lower()

    def before(self, pos: int) -> int:
        """Number of words that end at or before `pos`."""
        return bisect.bisect_right(self.ends, pos)

    def from_(self, pos: int) -> int:
        """Index of the first word that starts at or after `pos`."""
        return bisect.bisect_left(self.starts, pos)


# A character no word holds (see _WORD): no word runs across it.
_NOT_IN_WORD = re.compile(r"[^\w'\-]")


# Past this many characters around a match, the guards index the whole text once instead (a very
# long word, or a stretch with few words): a stretch is a saving, never a cost of its own.
_AROUND_LIMIT = 4096


def _around(text: str, start: int, end: int, words_before: int, words_after: int) -> _WordIndex | None:
    """The words around a match [start, end): at least `words_before` of them ending by `start`
    (or all from the start of the text) and `words_after` from `end` (or all to its end), which is
    all the guards read. Indexing only this stretch, not the whole text, is what keeps the guards'
    cost flat in the length of a text. The stretch starts just after, and ends at, a character no
    word holds: a word scan of it finds the same words as a scan of the whole text. None when the
    stretch would pass _AROUND_LIMIT characters."""
    # about 8 characters a word; a stretch that holds too few words is widened
    reach_before = 8 * (words_before + 1)
    reach_after = 8 * (words_after + 1)
    size = len(text)
    while reach_before <= _AROUND_LIMIT and reach_after <= _AROUND_LIMIT:
        lo = max(0, start - reach_before)
        floor = max(0, lo - _AROUND_LIMIT)
        while lo > floor and not _NOT_IN_WORD.match(text, lo - 1):
            lo -= 1
        if lo and not _NOT_IN_WORD.match(text, lo - 1):
            return None  # inside a very long word
        ceiling = min(size, end + 2 * _AROUND_LIMIT)
        found = _NOT_IN_WORD.search(text, min(size, end + reach_after), ceiling)
        if found is not None:
            hi = found.start()
        elif ceiling == size:
            hi = size
        else:
            return None  # inside a very long word
        index = _WordIndex(text, lo, hi)
        if (lo == 0 or index.before(start) >= words_before) and (
            hi == size or len(index.starts) - index.from_(end) >= words_after
        ):
            return index
        reach_before *= 4
        reach_after *= 4
    return None


def _index_for(cache: dict, text: str, start: int, end: int, before: int, after: int) -> _WordIndex:
    """_around, reusing the index made for the same match when it holds enough words, or the
    whole text's index (made once) when _around gives up."""
    key = ("index", start, end)
    held = cache.get(key)
    if held is not None and held[1] >= before and held[2] >= after:
        return held[0]
    if held is not None:
        before, after = max(before, held[1]), max(after, held[2])
    index = _around(text, start, end, before, after)
    if index is None:
        if "whole" not in cache:
            cache["whole"] = _WordIndex(text)
        index = cache["whole"]
    # what it holds: words before and after the match (all of them at an end of the text)
    has_before = len(text) if index.lo == 0 else index.before(start)
    has_after = len(text) if index.hi == len(text) else len(index.starts) - index.from_(end)
    cache[key] = (index, has_before, has_after)
    return index


def _negated(text: str, index: _WordIndex, start: int) -> bool:
    i = index.before(start)
    for j in range(i - 1, max(i - 1 - NEGATION_WINDOW, -1), -1):
        # Stop at a clause boundary between this word and the match.
        if _CLAUSE_END.search(text, index.ends[j], start):
            return False
        word = index.word(j)
        if _COMMA.search(text, index.ends[j], start) and (word not in NEGATIONS or word in _INTERJECTIONS):
            return False
        if word in NEGATIONS or word in REPORTING:
            return True
    return False


def _asked(text: str, end: int) -> bool:
    """The sentence the match ends in ends with a question mark."""
    found = _SENTENCE_END.search(text, end)
    return found is not None and text[found.start()] == "?"


def _quoted(text: str, start: int, end: int) -> bool:
    """The match lies between two double quotation marks on its line, or inside a single-quoted
    passage of it (opened before the match and not closed before it, closed after it)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    before = text.count(_QUOTE, line_start, start)
    if before % 2 == 1 and _QUOTE in text[end:line_end] and _QUOTE not in text[start:end]:
        return True
    if "'" not in text[line_start:start]:
        return False
    # Searched to the line's end, not the match's start: a mark's look-ahead reads the next character.
    marks = sorted(
        [(m.start(), True) for m in _SINGLE_OPEN.finditer(text, line_start, line_end)]
        + [(m.start(), False) for m in _SINGLE_CLOSE.finditer(text, line_start, line_end)]
    )
    before_match = [is_open for at, is_open in marks if at < start]
    if not before_match or not before_match[-1]:
        return False
    inside = any(start <= at < end for at, is_open in marks if not is_open)
    return not inside and any(at >= end for at, is_open in marks if not is_open)


def _guarded(text: str, index: _WordIndex, start: int, end: int) -> bool:
    """The negation guard: the hit is negated or reported, asked or quoted (module docstring)."""
    return _negated(text, index, start) or _asked(text, end) or _quoted(text, start, end)


def _in_context(text: str, index: _WordIndex, rule: _CompiledRule, start: int, end: int) -> bool:
    assert rule.context is not None
    window = rule.spec.context_window
    n_before = index.before(start)
    if n_before:
        lo = index.starts[max(n_before - window, 0)]
        if rule.context.search(text, lo, start):
            return True
    first_after = index.from_(end)
    if first_after < len(index.starts):
        hi = index.ends[min(first_after + window, len(index.ends)) - 1]
        if rule.context.search(text, end, hi):
            return True
    return False


def _in_context_cached(
    cache: dict, text: str, index: _WordIndex, rule: _CompiledRule, start: int, end: int
) -> bool:
    """_in_context, shared by the rules with the same context terms that found the same match (the
    backtest: a rule and its copy with another window). A term within w words is within any wider
    window too, so what one window found answers for the others: the widest window known to find
    nothing, the narrowest known to find a term."""
    key = ("context", rule.context.pattern, start, end)  # type: ignore[union-attr]
    window = rule.spec.context_window
    known = cache.get(key)
    if known is not None:
        nothing_up_to, found_from = known
        if window <= nothing_up_to:
            return False
        if window >= found_from:
            return True
    else:
        nothing_up_to, found_from = 0, 1 << 62
    found = _in_context(text, index, rule, start, end)
    if found:
        found_from = min(found_from, window)
    else:
        nothing_up_to = max(nothing_up_to, window)
    cache[key] = (nothing_up_to, found_from)
    return found


def iter_hits(
    text: str,
    compiled: CompiledRules,
    *,
    finder: Callable[[_CompiledRule, str], Iterable[re.Match[str]]] | None = None,
    cache: dict | None = None,
) -> Iterator[RuleHit]:
    """The rule hits of `text` one at a time, rule by rule in the order of `compiled` (not sorted),
    so that a caller who needs only the first one (the backtest: "does any rule route this?")
    stops there. The guards index only the words around each match (_around). A caller that
    matches the same text again with other rules passes the same `cache` dict: a match two rules
    share (the backtest: a rule and its edited copy) is then indexed and negation-checked once.
    `finder(rule, folded_text)` replaces `rule.regex.finditer(folded_text)` for a caller that can
    find the same matches faster (the backtest: scoring.backtest.anchored_matches)."""
    if not isinstance(text, str):
        raise TypeError(f"match() needs a str, not {type(text).__name__}.")
    if not text or not compiled.rules:
        return
    folded = text.translate(_FOLD) if not text.isascii() else text  # _FOLD maps non-ASCII only
    cache = {} if cache is None else cache
    for rule in compiled.rules:
        spec = rule.spec
        if spec.negation_guard or rule.context is not None:
            window = spec.context_window if rule.context is not None else 0
            before = max(window, NEGATION_WINDOW if spec.negation_guard else 0)
        # finditer never overlaps its own matches, so one rule reports a stretch of text once.
        for m in rule.regex.finditer(folded) if finder is None else finder(rule, folded):
            start, end = m.span()
            if start == end:
                continue
            if spec.negation_guard or rule.context is not None:
                index = _index_for(cache, folded, start, end, before, window)
                if spec.negation_guard:
                    key = ("guarded", start, end)
                    if key not in cache:
                        cache[key] = _guarded(folded, index, start, end)
                    if cache[key]:
                        continue
                if rule.context is not None and not _in_context_cached(
                    cache, folded, index, rule, start, end
                ):
                    continue
            yield RuleHit(
                rule_id=spec.rule_id,
                code=spec.code,
                rule_set_version=spec.rule_set_version,
                claim_type=spec.claim_type,
                start=start,
                end=end,
                text=text[start:end],
            )


def match(text: str, compiled: CompiledRules) -> list[RuleHit]:
    """Every rule hit in `text`, as character spans into the original text, sorted by
    (start, end, rule id). Hits of one rule never overlap (each stretch of text is reported
    once); different rules may report the same phrase."""
    hits = list(iter_hits(text, compiled))
    hits.sort(key=lambda h: (h.start, h.end, h.rule_id))
    return hits
