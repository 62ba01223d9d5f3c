"""Drift phrasings: claims written to slip past surveillance, in obfuscated spellings that appear
NOWHERE in the corpus (not in train, val, test or novel_phrasing): "z3ro r1sk", "gu@r@nteed",
"F-C-A approved". `generate_drift_messages` uses them to emulate a new claim style that the
deployed model was never trained on; reviewers' labels of such messages are what a challenger
model is then trained on.

Why obfuscation: the corpus now teaches the model euphemisms, idioms and indirect phrasings in
many shapes ("your principal is bulletproof" is learned, as it should be), so a drift that a good
model still misses must be a style the corpus has never shown. Senders who know their mail is
watched do write like this; a word-piece model sees "r1sk" as unfamiliar pieces, not as "risk".

DRIFT_MARKERS are the obfuscated words themselves; a test checks that none occurs in the corpus.

Homoglyphs on top: the model trained on the family-disjoint corpus reads through leetspeak
("z3ro r1sk" is still "zero risk" to it: it flagged 97 % of these claims written in Latin letters),
so drift messages are also written in look-alike Cyrillic letters (HOMOGLYPHS: Cyrillic a for Latin a,
Cyrillic ie for e, ...), as senders do to get past keyword filters. A reviewer reads the same words; the
word-piece model sees unfamiliar pieces (it flagged 25 % of them, 17 % of risk_free). The
substitution is one character for one, so offsets stay valid; `plain_letters` undoes it."""

from __future__ import annotations

Family = tuple[str, str]

# fmt: off
FAMILIES: dict[str, tuple[Family, ...]] = {
    "guaranteed_returns": (
        ("drift-gr-01", "[[{product:cap} pays {yield_pct} a y3ar, gu@r@nteed]]{, every single year|}."),
        ("drift-gr-02", "[[{yield_pct} r3turns {period}, 100% c3rtain]] with {product}."),
        ("drift-gr-03", "[[f1xed {yield_pct} pr0fit n0 m@tter wh@t]] in {product}."),
        ("drift-gr-04", "[[g-u-a-r-a-n-t-e-e-d {income} a month]] from {product}."),
        ("drift-gr-05", "[[Your {amount} earns {yield_pct}, l0cked 1n]] with {product}."),
        ("drift-gr-06", "[[{product:cap}: {yield_pct} y1eld, gu@ranteed by us]]."),
        ("drift-gr-07", "[[the {yield_pct} is a d3ad c3rt]] on {product}{, trust me|}."),
        ("drift-gr-08", "[[{income} every m0nth, 100% gu@r@nteed]] from {product}."),
    ),
    "risk_free": (
        ("drift-rf-01", "[[z3ro r1sk]] with {product}{, ur {amount} is fine|}."),
        ("drift-rf-02", "[[y0u c@n't l0se a p3nny]] in {product}."),
        ("drift-rf-03", "[[{product:cap} is r1sk-fr33]]{ for ur savings|}."),
        ("drift-rf-04", "[[ur c@pit@l is 100% s@fe]] in {product}."),
        ("drift-rf-05", "[[n0 d0wns1de at all]] with {product}{, worst case u get it all back|}."),
        ("drift-rf-06", "[[{product:cap} c@nn0t g0 d0wn]]{, ever|}."),
        ("drift-rf-07", "[[your {amount} is pr0tect3d 100%]] in {product}."),
        ("drift-rf-08", "[[r-i-s-k f-r-e-e]] {product}{, no joke|}."),
    ),
    "performance_forecast": (
        ("drift-pf-01", "[[{stock:cap} w1ll d0uble by {month}]]."),
        ("drift-pf-02", "[[{stock:cap} g0ing t0 {price} {deadline}]]."),
        ("drift-pf-03", "[[3xp3ct {gain_pct} up on {stock} by {month}]]."),
        ("drift-pf-04", "[[{stock:cap} is a t3n-b@gger {deadline}]]{, get in now|}."),
        ("drift-pf-05", "[[{stock:cap} w1ll h1t {price} {deadline}]]."),
        ("drift-pf-06", "[[{stock:cap} +{gain_pct} by {month}, e@sy]]."),
        ("drift-pf-07", "[[{stock:cap} tr1ples {deadline}]]{, mark my words|}."),
        ("drift-pf-08", "[[{stock:cap} g0es up {gain_pct} after {catalyst}]]."),
    ),
    "regulatory_endorsement": (
        ("drift-re-01", "[[{product:cap} is {regulator_acronym}-@pproved]]."),
        ("drift-re-02", "[[@pproved by the {regulator_acronym}]], {product} is the real deal."),
        ("drift-re-03", "[[the {regulator_acronym} 3ndors3d {product}]]{ for savers|}."),
        ("drift-re-04", "[[{product:cap} is b@cked by the {regulator_acronym}]]."),
        ("drift-re-05", "[[{product:cap} got the r3gul@tor's st@mp]]."),
        ("drift-re-06", "[[{regulator_acronym} s1gned 0ff on {product}]]{ personally|}."),
        ("drift-re-07", "[[{product:cap}, c3rt1f13d by the {regulator_acronym}]]."),
        ("drift-re-08", "[[{regulator_acronym} v3tted {product} for retirees]]."),
    ),
}
# fmt: on

# Latin letter -> the Cyrillic letter that looks the same (one code point each).
HOMOGLYPHS: dict[str, str] = {
    "a": "\u0430", "c": "\u0441", "e": "\u0435", "i": "\u0456", "o": "\u043e", "p": "\u0440",
    "x": "\u0445", "y": "\u0443", "A": "\u0410", "B": "\u0412", "C": "\u0421", "E": "\u0415",
    "H": "\u041d", "K": "\u041a", "M": "\u041c", "O": "\u041e", "P": "\u0420", "T": "\u0422",
}  # fmt: skip
_TO_HOMOGLYPHS = str.maketrans(HOMOGLYPHS)
_TO_LATIN = str.maketrans({glyph: letter for letter, glyph in HOMOGLYPHS.items()})


def in_homoglyphs(text: str) -> str:
    """`text` with every letter that has a Cyrillic look-alike replaced by it (same length)."""
    return text.translate(_TO_HOMOGLYPHS)


def plain_letters(text: str) -> str:
    """The inverse of in_homoglyphs."""
    return text.translate(_TO_LATIN)


DRIFT_MARKERS: tuple[str, ...] = (
    "y3ar", "gu@r@nteed", "gu@ranteed", "r3turns", "c3rtain", "f1xed", "pr0fit", "n0 m@tter",
    "g-u-a-r-a-n-t-e-e-d", "l0cked", "y1eld", "d3ad c3rt", "m0nth", "z3ro", "r1sk", "c@n't",
    "l0se", "p3nny", "fr33", "c@pit@l", "s@fe", "n0 d0wns1de", "c@nn0t", "pr0tect3d", "r-i-s-k",
    "f-r-e-e", "w1ll", "d0uble", "g0ing", "3xp3ct", "t3n-b@gger", "h1t", "e@sy", "tr1ples", "g0es",
    "@pproved", "3ndors3d", "b@cked", "r3gul@tor", "st@mp", "s1gned 0ff", "c3rt1f13d", "v3tted",
)  # fmt: skip
