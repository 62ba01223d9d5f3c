"""The corpus plan (how many rows of which kind and shape), the family-disjoint split and the
canary set.

Splits are by family: every template family and every content part belongs to one split only
(banks.py), and a recipe's rows of a split are drawn from that split's families, so val (where
early stopping and the threshold are chosen) and test measure phrasings the model never
trained on. novel_phrasing rows (their own families and vocabulary) are test-only as before."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from scoring.corpus import chatparts, claims, claims_more, claims_varied, deskchat, negatives, novel
from scoring.corpus.banks import (
    SPLIT_NAMES,
    SPLIT_SHARES,
    SplitBanks,
    counterpart_families,
    split_banks,
    twin_families,
)
from scoring.corpus.framing import OFFICE_NOTICE, PADDING_POSITIONS
from scoring.corpus.messages import CORELESS_SHAPES, SHAPES, Message, Options, compose
from scoring.corpus.rows import make_row
from scoring.corpus.schema import CLAIM_TYPES, NO_CLAIM, SLICES, CorpusError
from scoring.corpus.vocab import BASE, NOVEL, Vocabulary

DEFAULT_SEED = 20240611
MAX_ATTEMPTS = 60
Family = tuple[str, str]
_NONE: tuple[Family, ...] = ()


@dataclass(frozen=True)
class Recipe:
    """A planned group of rows: `count` rows (over all splits) drawn round-robin from each
    split's share of `families`, rendered in `style` and `shape`, tagged with `slices` (plus
    "signature" where the drawn signature carries a disclaimer). A coreless shape has no
    families. One recipe is one split stratum."""

    key: str
    count: int
    claim_type: str
    families: tuple[Family, ...]
    slices: tuple[str, ...]
    style: str = "plain"
    shape: str = "short"
    vocabulary: Vocabulary = BASE
    test_only: bool = False
    options: Options = field(default_factory=Options)

    def __post_init__(self) -> None:
        if self.style not in ("plain", "informal"):
            raise CorpusError(f"recipe {self.key}: unknown style {self.style!r}")
        if self.shape not in SHAPES:
            raise CorpusError(f"recipe {self.key}: unknown shape {self.shape!r}")
        if (self.shape in CORELESS_SHAPES and self.families) or (
            not self.families and self.shape not in (*CORELESS_SHAPES, "long", "review")
        ):
            raise CorpusError(f"recipe {self.key}: shape {self.shape} and families do not fit")
        if tuple(sorted(self.slices, key=SLICES.index)) != self.slices:
            raise CorpusError(f"recipe {self.key}: slices must be in canonical order")

    @property
    def label(self) -> int:
        return 0 if self.claim_type == NO_CLAIM else 1


# Quoted history a reply sits on: for claims, the client's question or note the claim answers;
# for negatives, also scams forwarded in.
CLAIM_REPLIES = Options(quoted_themes=("client_question", "client_update", "colleague", "adviser_earlier"))
NEGATIVE_REPLIES = Options(
    quoted_themes=("client_question", "client_question", "client_update", "colleague", "adviser_earlier")
)
SCAM_FORWARDS = Options(quoted_themes=("scam_forward",))
PLAIN_FORWARDS = Options(quoted_themes=("client_update", "colleague", "adviser_earlier"))


def corpus_plan() -> list[Recipe]:
    """Every group of rows the corpus holds. The order matters only for reproducibility."""
    recipes: list[Recipe] = []
    for code in CLAIM_TYPES:
        sentences = claims.STANDARD[code] + claims_varied.VARIED[code] + claims_more.MORE[code]
        lines = chatparts.CLAIM_LINES[code]
        recipes += [
            Recipe(f"{code}/standard", 170, code, sentences, ("standard",)),
            Recipe(f"{code}/split", 45, code, claims.SPLIT[code], ("split_sentence",)),
            Recipe(f"{code}/informal", 30, code, claims.INFORMAL[code], ("informal",), "informal"),
            Recipe(f"{code}/informal-styled", 20, code, sentences, ("informal",), "informal"),
            Recipe(f"{code}/padded", 30, code, claims.STANDARD[code], ("padded",), shape="padded"),
            Recipe(f"{code}/email", 70, code, sentences, ("standard",), shape="email"),
            Recipe(
                f"{code}/reply",
                45,
                code,
                sentences,
                ("quoted_history",),
                shape="reply",
                options=CLAIM_REPLIES,
            ),
            Recipe(f"{code}/long", 30, code, sentences, ("long_email",), shape="long"),
            Recipe(f"{code}/review", 25, code, sentences, ("long_email",), shape="review"),
            Recipe(f"{code}/chat", 50, code, lines, ("chat_transcript",), shape="chat"),
            Recipe(
                f"{code}/chat-line", 20, code, sentences, ("informal", "chat_transcript"), shape="chat_line"
            ),
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
    # The minimal pairs of the claim families (banks.counterparts), in the same shapes.
    pairs = counterpart_families(
        tuple(f for code in CLAIM_TYPES for f in claims.STANDARD[code] + claims_varied.VARIED[code])
    )
    pair_splits = counterpart_families(tuple(f for code in CLAIM_TYPES for f in claims.SPLIT[code]))
    pair_informal = counterpart_families(tuple(f for code in CLAIM_TYPES for f in claims.INFORMAL[code]))
    pair_chats = counterpart_families(tuple(f for code in CLAIM_TYPES for f in chatparts.CLAIM_LINES[code]))
    twins = twin_families(
        tuple(f for code in CLAIM_TYPES for f in claims.STANDARD[code] + claims_varied.VARIED[code])
    )
    twin_splits = twin_families(tuple(f for code in CLAIM_TYPES for f in claims.SPLIT[code]))
    twin_informal = twin_families(tuple(f for code in CLAIM_TYPES for f in claims.INFORMAL[code]))
    recipes += [
        Recipe("twin/standard", 260, n, twins, ("negation",)),
        Recipe("twin/split", 40, n, twin_splits, ("negation", "split_sentence")),
        Recipe("twin/informal", 40, n, twin_informal, ("negation", "informal"), "informal"),
        Recipe("twin/email", 100, n, twins, ("negation",), shape="email"),
        Recipe(
            "twin/chat-line", 40, n, twins, ("negation", "informal", "chat_transcript"), shape="chat_line"
        ),
    ]
    recipes += [
        Recipe("pair/standard", 380, n, pairs, ("negation",)),
        Recipe("pair/split", 60, n, pair_splits, ("negation", "split_sentence")),
        Recipe("pair/informal", 50, n, pair_informal, ("negation", "informal"), "informal"),
        Recipe("pair/email", 150, n, pairs, ("negation",), shape="email"),
        Recipe(
            "pair/reply",
            80,
            n,
            pairs,
            ("negation", "quoted_history"),
            shape="reply",
            options=NEGATIVE_REPLIES,
        ),
        Recipe("pair/long", 50, n, pairs, ("negation", "long_email"), shape="long"),
        Recipe("pair/chat", 120, n, pair_chats, ("negation", "chat_transcript"), shape="chat"),
        Recipe(
            "pair/chat-line", 40, n, pairs, ("negation", "informal", "chat_transcript"), shape="chat_line"
        ),
    ]
    neutral = negatives.NEUTRAL
    hard = negatives.HARD + _world(
        (
            "client_question",
            "historical",
            "third_party_forecast",
            "regulator_news",
            "risk_talk",
            "other_domain",
        )
    )
    negation = negatives.NEGATION + _world(("refusal", "minimal_pair"))
    warnings = _world(("scam_warning",))
    recipes += [
        Recipe("neg/neutral", 420, n, neutral, ("standard",)),
        Recipe("neg/office-notice", 50, n, (OFFICE_NOTICE,), ("standard",)),
        Recipe("neg/hard", 480, n, hard, ("hard_negative",)),
        Recipe("neg/scam-warning", 60, n, warnings, ("hard_negative",)),
        Recipe("neg/negation", 260, n, negation, ("negation",)),
        Recipe("neg/split-hard", 60, n, negatives.SPLIT_HARD, ("hard_negative", "split_sentence")),
        Recipe("neg/informal", 50, n, negatives.INFORMAL_NEUTRAL, ("informal",), "informal"),
        Recipe("neg/informal-styled", 30, n, neutral, ("informal",), "informal"),
        Recipe(
            "neg/informal-hard", 40, n, negatives.INFORMAL_HARD, ("hard_negative", "informal"), "informal"
        ),
        Recipe("neg/informal-hard-styled", 30, n, hard, ("hard_negative", "informal"), "informal"),
        Recipe(
            "neg/informal-negation", 20, n, negatives.INFORMAL_NEGATION, ("negation", "informal"), "informal"
        ),
        Recipe("neg/informal-negation-styled", 20, n, negation, ("negation", "informal"), "informal"),
        Recipe("neg/padded", 60, n, neutral, ("padded",), shape="padded"),
        Recipe("neg/padded-hard", 40, n, negatives.HARD, ("hard_negative", "padded"), shape="padded"),
        Recipe("neg/padded-negation", 20, n, negatives.NEGATION, ("negation", "padded"), shape="padded"),
        Recipe("neg/email", 150, n, neutral, ("standard",), shape="email"),
        Recipe("neg/email-hard", 160, n, hard, ("hard_negative",), shape="email"),
        Recipe("neg/email-negation", 80, n, negation, ("negation",), shape="email"),
        Recipe("neg/business-email", 110, n, _NONE, ("standard",), shape="business_email"),
        Recipe("neg/reply", 120, n, neutral, ("quoted_history",), shape="reply", options=NEGATIVE_REPLIES),
        Recipe(
            "neg/reply-negation",
            100,
            n,
            negation,
            ("negation", "quoted_history"),
            shape="reply",
            options=NEGATIVE_REPLIES,
        ),
        Recipe(
            "neg/reply-hard",
            60,
            n,
            hard,
            ("hard_negative", "quoted_history"),
            shape="reply",
            options=NEGATIVE_REPLIES,
        ),
        Recipe(
            "neg/forward-scam",
            90,
            n,
            warnings,
            ("hard_negative", "quoted_history"),
            shape="forward",
            options=SCAM_FORWARDS,
        ),
        Recipe("neg/forward", 40, n, neutral, ("quoted_history",), shape="forward", options=PLAIN_FORWARDS),
        Recipe("neg/long", 120, n, neutral, ("long_email",), shape="long"),
        Recipe("neg/long-hard", 60, n, hard + negation, ("hard_negative", "long_email"), shape="long"),
        Recipe("neg/long-letter", 80, n, _NONE, ("long_email",), shape="long"),
        Recipe("neg/chat", 200, n, chatparts.NEGATIVE_LINES, ("chat_transcript",), shape="chat"),
        Recipe("neg/chat-qa", 150, n, deskchat.GUARANTEE_QA, ("negation", "chat_transcript"), shape="chat"),
        Recipe("neg/other-meanings", 150, n, deskchat.OTHER_MEANINGS, ("hard_negative",)),
        Recipe("neg/other-meanings-email", 60, n, deskchat.OTHER_MEANINGS, ("hard_negative",), shape="email"),
        Recipe("neg/review", 150, n, _NONE, ("long_email",), shape="review"),
        Recipe("neg/review-hard", 60, n, hard + negation, ("hard_negative", "long_email"), shape="review"),
        Recipe("neg/chatter", 90, n, _NONE, ("chat_transcript",), shape="chatter"),
        Recipe(
            "neg/chat-line-hard",
            50,
            n,
            hard + negation,
            ("hard_negative", "informal", "chat_transcript"),
            shape="chat_line",
        ),
        Recipe("neg/novel", 80, n, novel.NEGATIVES, ("novel_phrasing",), vocabulary=NOVEL, test_only=True),
    ]
    return recipes


def _world(themes: tuple[str, ...]) -> tuple[Family, ...]:
    from scoring.corpus import negatives_world

    return tuple(f for theme in themes for f in negatives_world.WORLD[theme])


def planned_size() -> int:
    return sum(recipe.count for recipe in corpus_plan())


def split_counts(count: int) -> dict[str, int]:
    """A recipe's rows per split, in the shares of SPLIT_SHARES (train takes the rounding)."""
    counts = {split: round(count * share) for split, share in SPLIT_SHARES[1:]}
    counts = {SPLIT_NAMES[0]: count - sum(counts.values()), **counts}
    return counts


def _families_of(recipe: Recipe, banks: SplitBanks, split: str) -> list[Family]:
    if recipe.test_only:
        return list(recipe.families) if split == "test" else []
    chosen = [f for f in recipe.families if banks.split_of.get(f[0]) == split]
    missing = [f[0] for f in recipe.families if f[0] not in banks.split_of]
    if missing:
        raise CorpusError(f"recipe {recipe.key}: families in no pool: {missing[:5]}")
    return chosen


def _draw(recipe: Recipe, template: str | None, *, rng, banks, split, seen, position) -> Message:
    for _ in range(MAX_ATTEMPTS):
        message = compose(
            recipe.shape,
            template,
            style=recipe.style,
            rng=rng,
            banks=banks,
            split=split,
            vocabulary=recipe.vocabulary,
            options=recipe.options,
            position=position,
        )
        if message.body not in seen:
            seen.add(message.body)
            return message
    raise CorpusError(f"recipe {recipe.key}: no new body after {MAX_ATTEMPTS} draws")


def _recipe_rows(
    recipe: Recipe, seed: int, banks: SplitBanks, seen: set[str], progress: Callable[[int], None] | None
) -> list[dict]:
    rng = random.Random(f"{seed}:{recipe.key}")
    counts = {"test": recipe.count} if recipe.test_only else split_counts(recipe.count)
    by_split = {
        split: list(_families_of(recipe, banks, split)) if recipe.families else [None] for split in counts
    }
    for split in list(counts)[1:]:
        if not by_split[split]:  # a family pool too small for every split (the office notice)
            counts["train"] += counts.pop(split)
    rows: list[dict] = []
    for split, count in counts.items():
        families: list[Family | None] = by_split[split]
        if not families and count:
            raise CorpusError(f"recipe {recipe.key} has no family in split {split}")
        rng.shuffle(families)
        for i in range(count):
            family = families[i % len(families)]
            position = PADDING_POSITIONS[(i + i // len(families)) % 3] if recipe.shape == "padded" else None
            message = _draw(
                recipe,
                family[1] if family else None,
                rng=rng,
                banks=banks,
                split=split,
                seen=seen,
                position=position,
            )
            slices = recipe.slices
            if message.has_disclaimer:
                tags = [t for t in recipe.slices if t != "standard"] + ["signature"]
                slices = tuple(sorted(tags, key=SLICES.index))
            rows.append(
                make_row(
                    row_id="",
                    message=message,
                    claim_type=recipe.claim_type,
                    split=split,
                    slices=slices,
                    template=family[0] if family else f"shape:{recipe.shape}",
                )
            )
            if progress is not None:
                progress(1)
    return rows


def generate_corpus(seed: int = DEFAULT_SEED, *, progress: Callable[[int], None] | None = None) -> list[dict]:
    """The labelled corpus: the same seed gives the same rows, byte for byte once written.

    `progress(n)` is called as rows are made (for a progress bar)."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise CorpusError(f"seed must be an integer, not {seed!r}")
    banks = split_banks(seed)
    seen: set[str] = set()  # membership only; never iterated
    rows: list[dict] = []
    for recipe in corpus_plan():
        rows.extend(_recipe_rows(recipe, seed, banks, seen, progress))
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
