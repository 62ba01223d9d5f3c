"""Which split each template family and each content part belongs to: one split, never two.

A corpus whose train, val and test splits share template families measures whether the model
remembers its templates, and a threshold chosen on such a val split is chosen on phrasings the
model trained on. Here every family (the core sentence of a message) and every content part (a
business paragraph, a disclaimer, a quoted earlier message, a chat line) is assigned to exactly
one split, by a seeded shuffle of its pool, in the shares of SPLIT_SHARES; a message draws its
core and all its parts from its own split. Framing that carries no content (greetings, sign-offs,
the shape of a header or a timestamp, the office-trivia padding of the padded slice) is shared.

Pure Python; deterministic given the seed (no hash(), no set order).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from scoring.corpus import (
    business,
    chatparts,
    claims,
    claims_more,
    claims_varied,
    counterparts_base,
    counterparts_varied,
    deskchat,
    mailparts,
    negation_twins,
    negatives,
    negatives_world,
    structured,
)
from scoring.corpus.framing import OFFICE_NOTICE
from scoring.corpus.schema import CLAIM_TYPES, CorpusError

Family = tuple[str, str]

SPLIT_SHARES: tuple[tuple[str, float], ...] = (("train", 0.6), ("val", 0.2), ("test", 0.2))
SPLIT_NAMES: tuple[str, ...] = tuple(name for name, _ in SPLIT_SHARES)


def _ids(prefix: str, lines: Sequence[str]) -> tuple[Family, ...]:
    return tuple((f"{prefix}-{i:03d}", line) for i, line in enumerate(lines, start=1))


# --- the pools: every family of a pool is split together --------------------------------------------


def claim_pools(code: str) -> dict[str, tuple[Family, ...]]:
    """The in-distribution claim families of one type, in groups that are each split on their
    own, so that every split has some of each (novel_phrasing families are test-only)."""
    return {
        "standard": claims.STANDARD[code],
        "split": claims.SPLIT[code],
        "informal": claims.INFORMAL[code],
        "varied": claims_varied.VARIED[code],
        "more": claims_more.MORE[code],
        "chat": chatparts.CLAIM_LINES[code],
    }


def negative_pools() -> dict[str, tuple[Family, ...]]:
    pools = {
        "neutral": negatives.NEUTRAL,
        "informal-neutral": negatives.INFORMAL_NEUTRAL,
        "hard": negatives.HARD,
        "informal-hard": negatives.INFORMAL_HARD,
        "negation": negatives.NEGATION,
        "informal-negation": negatives.INFORMAL_NEGATION,
        "split-hard": negatives.SPLIT_HARD,
        "chat-negative": chatparts.NEGATIVE_LINES,
        "chat-qa": deskchat.GUARANTEE_QA,
        "other-meanings": deskchat.OTHER_MEANINGS,
    }
    pools.update({f"world:{theme}": families for theme, families in negatives_world.WORLD.items()})
    return pools


def part_pools() -> dict[str, tuple[Family, ...]]:
    """Content parts: business paragraphs by theme, disclaimers by region, quoted mail by theme,
    chat lines."""
    pools: dict[str, tuple[Family, ...]] = {}
    for theme, families in business.PARAGRAPHS.items():
        pools[f"business:{theme}"] = families
    for region, families in mailparts.DISCLAIMERS.items():
        pools[f"disclaimer:{region}"] = families
    for theme, families in mailparts.QUOTED.items():
        pools[f"quoted:{theme}"] = families
    pools["chatter"] = _ids("chatter", chatparts.CHATTER)
    pools["client-line"] = _ids("client-line", chatparts.CLIENT_LINES)
    pools["market-colour"] = _ids("colour", deskchat.MARKET_COLOUR)
    pools["ops-line"] = _ids("ops", deskchat.OPS_LINES)
    pools["figures"] = structured.FIGURE_LINES
    for theme, families in structured.REVIEW_PARAGRAPHS.items():
        pools[f"review:{theme}"] = families
    pools["market-notes"] = structured.MARKET_NOTES
    return pools


def all_pools() -> dict[str, tuple[Family, ...]]:
    pools = {f"claims:{code}:{group}": f for code in CLAIM_TYPES for group, f in claim_pools(code).items()}
    pools.update({f"negatives:{name}": families for name, families in negative_pools().items()})
    pools.update(part_pools())
    return pools


# --- the assignment ------------------------------------------------------------------------------


def _assign(pool: str, families: Sequence[Family], seed: int) -> dict[str, str]:
    ids = sorted(family_id for family_id, _ in families)
    if len(set(ids)) != len(ids):
        raise CorpusError(f"pool {pool} has duplicate family ids")
    rng = random.Random(f"{seed}:split:{pool}")
    rng.shuffle(ids)
    n = len(ids)
    if n < len(SPLIT_SHARES):
        raise CorpusError(f"pool {pool} has {n} families: too few to give every split one")
    # Cumulative shares, each split at least one family.
    counts = [max(1, round(share * n)) for _, share in SPLIT_SHARES[1:]]
    counts.insert(0, n - sum(counts))
    assignment, position = {}, 0
    for (split, _), count in zip(SPLIT_SHARES, counts, strict=True):
        for family_id in ids[position : position + count]:
            assignment[family_id] = split
        position += count
    return assignment


@dataclass(frozen=True)
class SplitBanks:
    """The families and parts of every pool, by split: `of(pool, split)`."""

    by_pool: dict[str, dict[str, tuple[Family, ...]]]
    split_of: dict[str, str]

    def of(self, pool: str, split: str) -> tuple[Family, ...]:
        try:
            families = self.by_pool[pool][split]
        except KeyError as exc:
            raise CorpusError(f"no pool {pool!r} (split {split!r})") from exc
        if not families:
            raise CorpusError(f"pool {pool!r} has no family in split {split!r}")
        return families


def counterparts() -> dict[str, Family]:
    """{claim family id: its counterpart}: the innocent minimal pair of every in-distribution
    claim family (negated, refused, asked, warned about, stated as history), which lives in the
    split of its claim family so that the model learns the pair together."""
    return {**counterparts_base.COUNTERPARTS, **counterparts_varied.COUNTERPARTS}


def twins() -> dict[str, Family]:
    """{claim family id: its negation twin}: the same template with the claim plainly denied
    ("are not guaranteed", "can lose money", "has not approved"), in its claim family's split."""
    return dict(negation_twins.TWINS)


def twin_families(families: Sequence[Family]) -> tuple[Family, ...]:
    """The negation twins of `families` (claim families), in their order."""
    pairs = twins()
    return tuple(pairs[family_id] for family_id, _ in families if family_id in pairs)


def counterpart_families(families: Sequence[Family]) -> tuple[Family, ...]:
    """The counterparts of `families` (claim families), in their order."""
    pairs = counterparts()
    return tuple(pairs[family_id] for family_id, _ in families if family_id in pairs)


def split_banks(seed: int) -> SplitBanks:
    """Every pool's families assigned to splits (the office notice, one family, to train; a
    counterpart to its claim family's split)."""
    split_of: dict[str, str] = {OFFICE_NOTICE[0]: "train"}
    by_pool: dict[str, dict[str, tuple[Family, ...]]] = {}
    for pool, families in all_pools().items():
        assignment = _assign(pool, families, seed)
        clash = [f for f in assignment if f in split_of]
        if clash:
            raise CorpusError(f"family ids in two pools: {clash[:5]}")
        split_of.update(assignment)
        by_pool[pool] = {
            split: tuple(f for f in families if assignment[f[0]] == split) for split in SPLIT_NAMES
        }
    for original, (family_id, _) in [*counterparts().items(), *twins().items()]:
        if original not in split_of:
            raise CorpusError(f"counterpart {family_id} of a family in no pool: {original}")
        if family_id in split_of:
            raise CorpusError(f"counterpart id {family_id} is already a family id")
        split_of[family_id] = split_of[original]
    return SplitBanks(by_pool=by_pool, split_of=split_of)
