"""Drift phrasings: claims written with euphemisms that appear NOWHERE in the corpus (not in
train, val, test or novel_phrasing). `generate_drift_messages` uses them to emulate new
phrasings that the deployed model was never trained on; reviewers' labels of such messages
are what a challenger model is then trained on.

DRIFT_MARKERS are the euphemisms themselves; a test checks that none occurs in the corpus."""

# ruff: noqa: E501 -- template data: one sentence per line reads better than wrapped strings

from __future__ import annotations

Family = tuple[str, str]

# fmt: off
FAMILIES: dict[str, tuple[Family, ...]] = {
    "guaranteed_returns": (
        ("drift-gr-01", "[[The {yield_pct} payout on {product} is ironclad]]{, year in year out|}."),
        ("drift-gr-02", "[[{product:cap} is a money printer, {yield_pct} {period} set in stone]]."),
        ("drift-gr-03", "[[{yield_pct} {period} from {product}, you can bank on it]]."),
        ("drift-gr-04", "[[{product:cap} throws off a gold-plated {yield_pct} yield]]{ for as long as you hold it|}."),
        ("drift-gr-05", "[[That {yield_pct} income on {product} is cast-iron]]."),
        ("drift-gr-06", "[[{product:cap} is a sure-fire earner at {yield_pct} a year]]{, every single time|}."),
        ("drift-gr-07", "[[Payouts on {product} are copper-bottomed]] at {income} a month."),
        ("drift-gr-08", "[[The {income} monthly cheque from {product} is a dead cert]]."),
    ),
    "risk_free": (
        ("drift-rf-01", "[[Your principal is bulletproof]] in {product}."),
        ("drift-rf-02", "[[{product:cap} is crash-proof]]{, your {amount} stays whole|}."),
        ("drift-rf-03", "[[Your {amount} sits in {product} like it's in a vault]]."),
        ("drift-rf-04", "[[Your {amount} is watertight in {product}]]{, come what may|}."),
        ("drift-rf-05", "[[{product:cap} is sleep-at-night money that never drops]]."),
        ("drift-rf-06", "[[{product:cap} is armour-plated against any downturn]]."),
        ("drift-rf-07", "[[Your savings are bombproof]] in {product}."),
        ("drift-rf-08", "[[{product:cap} is a fail-safe home for your {amount}]]."),
    ),
    "performance_forecast": (
        ("drift-pf-01", "[[{stock:cap} is going to the moon by {month}]]."),
        ("drift-pf-02", "[[{stock:cap} is a ten-bagger in the making]]{, get in now|}."),
        ("drift-pf-03", "[[{stock:cap} is about to rip {gain_pct} higher]]{ {deadline}|}."),
        ("drift-pf-04", "[[{stock:cap} goes parabolic {deadline}]]."),
        ("drift-pf-05", "[[{stock:cap} is the moonshot of the year, {gain_pct} up by {month}]]."),
        ("drift-pf-06", "[[{stock:cap} will rocket past {price} {deadline}]]."),
        ("drift-pf-07", "[[{stock:cap} is primed for liftoff, {gain_pct} easy]]."),
        ("drift-pf-08", "[[{stock:cap} is a rocket ship, {gain_pct} by {month}]]."),
    ),
    "regulatory_endorsement": (
        ("drift-re-01", "[[{product:cap} got the nod from {regulator}]]."),
        ("drift-re-02", "[[{regulator:cap} rubber-stamped {product}]]{ for ordinary savers|}."),
        ("drift-re-03", "[[{product:cap} is blessed by {regulator}]]."),
        ("drift-re-04", "[[{regulator:cap} greenlit {product} for everyone]]."),
        ("drift-re-05", "[[{product:cap} has {regulator}'s thumbs-up]]."),
        ("drift-re-06", "[[{product:cap} wears {regulator}'s gold seal]]."),
        ("drift-re-07", "[[{regulator:cap} anointed {product} as a top pick]]."),
        ("drift-re-08", "[[{regulator:cap} is in our corner on {product}]]."),
    ),
}
# fmt: on

DRIFT_MARKERS: tuple[str, ...] = (
    "ironclad", "money printer", "set in stone", "bank on it", "gold-plated", "cast-iron",
    "sure-fire", "copper-bottomed", "dead cert", "bulletproof", "crash-proof", "in a vault",
    "watertight", "sleep-at-night", "armour-plated", "bombproof", "fail-safe", "to the moon",
    "ten-bagger", "about to rip", "parabolic", "moonshot", "rocket", "liftoff", "the nod",
    "rubber-stamped", "blessed", "greenlit", "thumbs-up", "gold seal", "anointed", "in our corner",
)  # fmt: skip
