"""The corpus plan (how many rows of which kind), the stratified split and the canary set."""

from __future__ import annotations

import random
from collections.abc import Callable

from scoring.corpus import claims, negatives, novel
from scoring.corpus.framing import OFFICE_NOTICE, PADDING_POSITIONS
from scoring.corpus.rows import Recipe, draw_unique, make_row
from scoring.corpus.schema import CLAIM_TYPES, NO_CLAIM, CorpusError
from scoring.corpus.vocab import NOVEL

DEFAULT_SEED = 20240611
# 60 / 15 / 25 in blocks of 20, interleaved so that any run of consecutive rows is split
# in roughly these proportions.
SPLIT_SHARES: tuple[tuple[str, int], ...] = (("train", 12), ("val", 3), ("test", 5))


def corpus_plan() -> list[Recipe]:
    """Every group of rows the corpus holds. The order matters only for reproducibility."""
    recipes: list[Recipe] = []
    for code in CLAIM_TYPES:
        recipes += [
            Recipe(f"{code}/standard", 260, code, claims.STANDARD[code], ("standard",)),
            Recipe(f"{code}/split", 80, code, claims.SPLIT[code], ("split_sentence",)),
            Recipe(f"{code}/informal", 35, code, claims.INFORMAL[code], ("informal",), "informal"),
            Recipe(f"{code}/informal-styled", 25, code, claims.STANDARD[code], ("informal",), "informal"),
            Recipe(f"{code}/padded", 50, code, claims.STANDARD[code], ("padded",), "padded"),
            Recipe(
                f"{code}/novel",
                40,
                code,
                novel.CLAIMS[code],
                ("novel_phrasing",),
                vocabulary=NOVEL,
                test_only=True,
            ),
        ]
    n = NO_CLAIM
    recipes += [
        Recipe("neg/neutral", 900, n, negatives.NEUTRAL, ("standard",)),
        Recipe("neg/office-notice", 120, n, (OFFICE_NOTICE,), ("standard",)),
        Recipe("neg/hard", 1000, n, negatives.HARD, ("hard_negative",)),
        Recipe("neg/negation", 380, n, negatives.NEGATION, ("negation",)),
        Recipe("neg/split-hard", 110, n, negatives.SPLIT_HARD, ("hard_negative", "split_sentence")),
        Recipe("neg/informal", 70, n, negatives.INFORMAL_NEUTRAL, ("informal",), "informal"),
        Recipe("neg/informal-styled", 30, n, negatives.NEUTRAL, ("informal",), "informal"),
        Recipe(
            "neg/informal-hard", 40, n, negatives.INFORMAL_HARD, ("hard_negative", "informal"), "informal"
        ),
        Recipe("neg/informal-hard-styled", 20, n, negatives.HARD, ("hard_negative", "informal"), "informal"),
        Recipe(
            "neg/informal-negation", 20, n, negatives.INFORMAL_NEGATION, ("negation", "informal"), "informal"
        ),
        Recipe(
            "neg/informal-negation-styled", 15, n, negatives.NEGATION, ("negation", "informal"), "informal"
        ),
        Recipe("neg/padded", 100, n, negatives.NEUTRAL, ("padded",), "padded"),
        Recipe("neg/padded-hard", 60, n, negatives.HARD, ("hard_negative", "padded"), "padded"),
        Recipe("neg/padded-negation", 40, n, negatives.NEGATION, ("negation", "padded"), "padded"),
        Recipe("neg/novel", 80, n, novel.NEGATIVES, ("novel_phrasing",), vocabulary=NOVEL, test_only=True),
    ]
    return recipes


def planned_size() -> int:
    return sum(recipe.count for recipe in corpus_plan())


def split_pattern() -> list[str]:
    """The 20-slot split cycle, each split spread evenly over it."""
    slots = [((j + 0.5) / k, order, split) for order, (split, k) in enumerate(SPLIT_SHARES) for j in range(k)]
    return [split for _, _, split in sorted(slots)]


def _recipe_rows(
    recipe: Recipe, seed: int, seen: set[str], progress: Callable[[int], None] | None
) -> list[dict]:
    rng = random.Random(f"{seed}:{recipe.key}")
    families = list(recipe.families)
    rng.shuffle(families)
    drawn: list[tuple[int, dict]] = []
    for i in range(recipe.count):
        family_index = i % len(families)
        family_id, template = families[family_index]
        message = draw_unique(
            template,
            style=recipe.style,
            rng=rng,
            seen=seen,
            vocabulary=recipe.vocabulary,
            position=PADDING_POSITIONS[(i + i // len(families)) % 3] if recipe.style == "padded" else None,
            family_id=family_id,
        )
        row = make_row(
            row_id="",
            message=message,
            claim_type=recipe.claim_type,
            split="test",
            slices=recipe.slices,
            template=family_id,
        )
        drawn.append((family_index, row))
        if progress is not None:
            progress(1)
    # Consecutive rows of one family take consecutive slots of the interleaved cycle, so
    # every family is split in about the 60/15/25 proportions.
    drawn.sort(key=lambda pair: pair[0])
    rows = [row for _, row in drawn]
    if not recipe.test_only:
        pattern = split_pattern()
        offset = rng.randrange(len(pattern))
        for i, row in enumerate(rows):
            row["split"] = pattern[(offset + i) % len(pattern)]
    return rows


def generate_corpus(seed: int = DEFAULT_SEED, *, progress: Callable[[int], None] | None = None) -> list[dict]:
    """The labelled corpus: the same seed gives the same rows, byte for byte once written.

    `progress(n)` is called as rows are made (for a progress bar)."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise CorpusError(f"seed must be an integer, not {seed!r}")
    seen: set[str] = set()  # membership only; never iterated
    rows: list[dict] = []
    for recipe in corpus_plan():
        rows.extend(_recipe_rows(recipe, seed, seen, progress))
    random.Random(f"{seed}:order").shuffle(rows)
    for number, row in enumerate(rows, start=1):
        row["id"] = f"cw-{number:05d}"
    return rows


# --- canary set ---------------------------------------------------------------------------

# Per claim type: how many canaries from each slice (10 per type, 40 in all).
CANARY_MIX: tuple[tuple[str, int], ...] = (
    ("standard", 4),
    ("informal", 2),
    ("split_sentence", 2),
    ("padded", 2),
)


def _unambiguous(row: dict) -> bool:
    """Every rationale's text occurs exactly once in the body."""
    return all(row["body"].count(row["body"][start:end]) == 1 for start, end in row["rationales"])


def canary_ids(rows: list[dict]) -> list[str]:
    """The fixed canary set: 10 test-split claims per claim type, from several slices (never
    novel_phrasing), each with an unambiguous rationale. Deterministic given `rows`."""
    rng = random.Random("claimwatch-canary")
    chosen: list[str] = []
    for code in CLAIM_TYPES:
        for tag, k in CANARY_MIX:
            pool = sorted(
                row["id"]
                for row in rows
                if row["split"] == "test"
                and row["claim_type"] == code
                and tag in row["slices"]
                and "novel_phrasing" not in row["slices"]
                and _unambiguous(row)
            )
            if len(pool) < k:
                raise CorpusError(f"only {len(pool)} canary candidates for {code}/{tag}, need {k}")
            chosen.extend(rng.sample(pool, k))
    return sorted(chosen)
