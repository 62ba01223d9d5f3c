"""Messages outside the corpus, for the traffic simulator: drift and ordinary traffic.

Both use the corpus row schema (split "drift" or "traffic") and never repeat a corpus body, so
a simulated message is never a training example verbatim."""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import lru_cache

from scoring.corpus import claims, drift, negatives
from scoring.corpus.plan import DEFAULT_SEED, generate_corpus
from scoring.corpus.rows import Family, draw_unique, make_row
from scoring.corpus.schema import CLAIM_TYPES, NO_CLAIM, CorpusError

DRIFT_INFORMAL_SHARE = 0.25
# (kind, weight, families, slices, style) for ordinary traffic.
_CLAIM_KINDS: tuple[tuple[str, int], ...] = (("standard", 80), ("split", 10), ("informal", 10))
_NEGATIVE_KINDS: tuple[tuple[str, int], ...] = (
    ("neutral", 60),
    ("hard", 22),
    ("negation", 8),
    ("informal", 10),
)


@lru_cache(maxsize=1)
def corpus_bodies() -> frozenset[str]:
    """Bodies of the default corpus (generated once per process)."""
    return frozenset(row["body"] for row in generate_corpus(DEFAULT_SEED))


def _check_int(name: str, value: object, *, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise CorpusError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return value


def _check_claim_types(claim_types: Sequence[str]) -> list[str]:
    if isinstance(claim_types, str) or not isinstance(claim_types, Sequence) or not claim_types:
        raise CorpusError(f"claim_types must be a non-empty list of {list(CLAIM_TYPES)}")
    unknown = [code for code in claim_types if code not in CLAIM_TYPES]
    if unknown:
        raise CorpusError(f"unknown claim types {unknown}; expected some of {list(CLAIM_TYPES)}")
    if len(set(claim_types)) != len(claim_types):
        raise CorpusError(f"claim_types has duplicates: {list(claim_types)}")
    return list(claim_types)


def generate_drift_messages(*, seed: int, n: int, claim_types: Sequence[str]) -> list[dict]:
    """`n` claims in the drift style (obfuscated spellings, drift.FAMILIES, in Cyrillic look-alike
    letters, drift.in_homoglyphs), the claim types taken in
    turn from `claim_types`; a quarter in chat style. Split "drift", slices ["drift"] (plus
    "informal" where chat-styled). Same seed, same rows."""
    seed = _check_int("seed", seed, minimum=0)
    n = _check_int("n", n, minimum=0)
    codes = _check_claim_types(claim_types)
    rng = random.Random(f"drift:{seed}")
    seen = set(corpus_bodies())
    rows = []
    for i in range(n):
        code = codes[i % len(codes)]
        family_id, template = rng.choice(drift.FAMILIES[code])
        informal = rng.random() < DRIFT_INFORMAL_SHARE
        message = draw_unique(
            template, style="informal" if informal else "plain", rng=rng, seen=seen, family_id=family_id
        )
        row = make_row(
            row_id=f"drift-{seed}-{i + 1:05d}",
            message=message,
            claim_type=code,
            split="drift",
            slices=("informal", "drift") if informal else ("drift",),
            template=family_id,
        )
        rows.append({**row, "body": drift.in_homoglyphs(row["body"])})
    return rows


def _weighted(rng: random.Random, kinds: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([kind for kind, _ in kinds], weights=[weight for _, weight in kinds])[0]


def _claim_choice(rng: random.Random, code: str) -> tuple[tuple[Family, ...], tuple[str, ...], str]:
    kind = _weighted(rng, _CLAIM_KINDS)
    if kind == "split":
        return claims.SPLIT[code], ("split_sentence",), "plain"
    if kind == "informal":
        return claims.INFORMAL[code], ("informal",), "informal"
    return claims.STANDARD[code], ("standard",), "plain"


def _negative_choice(rng: random.Random) -> tuple[tuple[Family, ...], tuple[str, ...], str]:
    kind = _weighted(rng, _NEGATIVE_KINDS)
    if kind == "hard":
        return negatives.HARD, ("hard_negative",), "plain"
    if kind == "negation":
        return negatives.NEGATION, ("negation",), "plain"
    if kind == "informal":
        return negatives.INFORMAL_NEUTRAL + negatives.INFORMAL_HARD, ("informal",), "informal"
    return negatives.NEUTRAL, ("standard",), "plain"


def generate_traffic_messages(*, seed: int, n: int, claim_rate: float) -> list[dict]:
    """`n` ordinary in-distribution messages, exactly round(n * claim_rate) of them claims
    (types drawn uniformly), the rest mostly neutral with some hard negatives, negations and
    chat messages. Fresh filler draws; never a corpus body. Split "traffic"."""
    seed = _check_int("seed", seed, minimum=0)
    n = _check_int("n", n, minimum=0)
    if isinstance(claim_rate, bool) or not isinstance(claim_rate, int | float) or not 0 <= claim_rate <= 1:
        raise CorpusError(f"claim_rate must be a number within [0, 1], not {claim_rate!r}")
    rng = random.Random(f"traffic:{seed}")
    n_claims = round(n * claim_rate)
    is_claim = [True] * n_claims + [False] * (n - n_claims)
    rng.shuffle(is_claim)
    seen = set(corpus_bodies())
    rows = []
    for i, claim in enumerate(is_claim):
        code = rng.choice(CLAIM_TYPES) if claim else NO_CLAIM
        families, slices, style = _claim_choice(rng, code) if claim else _negative_choice(rng)
        if not claim and style == "informal":
            family_id = rng.choice(families)[0]
            slices = ("hard_negative", "informal") if family_id.startswith("hn-") else ("informal",)
            template = dict(families)[family_id]
        else:
            family_id, template = rng.choice(families)
        message = draw_unique(template, style=style, rng=rng, seen=seen, family_id=family_id)
        rows.append(
            make_row(
                row_id=f"traffic-{seed}-{i + 1:05d}",
                message=message,
                claim_type=code,
                split="traffic",
                slices=slices,
                template=family_id,
            )
        )
    return rows
