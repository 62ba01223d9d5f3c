"""Test-only templates of the novel_phrasing slice: sentence patterns and vocabulary that the
train and val splits never contain, to measure generalisation. They are rendered with the
NOVEL vocabulary (products, companies, regulators unseen elsewhere).

NOVEL_PHRASE_MARKERS are whole words or phrases that occur here and nowhere in the
in-distribution templates, fillers or padding; a test checks that none reaches train or val."""

# ruff: noqa: E501 -- template data: one sentence per line reads better than wrapped strings

from __future__ import annotations

Family = tuple[str, str]

# fmt: off
CLAIMS: dict[str, tuple[Family, ...]] = {
    "guaranteed_returns": (
        ("nov-gr-01", "[[We contractually commit to paying you {yield_pct} each year]] through {product}."),
        ("nov-gr-02", "[[{product:cap} pledges a coupon of {yield_pct} that will be honoured in every scenario]]."),
        ("nov-gr-03", "[[Every holder of {product} is owed {yield_pct} annually, whatever occurs]]."),
        ("nov-gr-04", "[[{product:cap} is underwritten to hand you {yield_pct} a year]]."),
        ("nov-gr-05", "[[Your {amount} accrues {yield_pct} yearly and that figure is immutable]]."),
        ("nov-gr-06", "[[The {yield_pct} distribution from {product} arrives every single year, irrespective of conditions]]."),
        ("nov-gr-07", "[[Holders of {product} collect {income} monthly, pledged unconditionally]]."),
        ("nov-gr-08", "[[{product:cap} yields {yield_pct} per annum with an unbreakable pledge behind it]]."),
    ),
    "risk_free": (
        ("nov-rf-01", "[[{product:cap} is immune to market losses]]."),
        ("nov-rf-02", "[[Not one cent of your principal can evaporate]] in {product}."),
        ("nov-rf-03", "[[{product:cap} insulates every penny of your savings from any decline]]."),
        ("nov-rf-04", "[[Your nest egg is untouchable]] inside {product}."),
        ("nov-rf-05", "[[Capital preservation is absolute]] with {product}."),
        ("nov-rf-06", "[[Market crashes cannot dent your holdings]] in {product}."),
        ("nov-rf-07", "[[{product:cap} shields your deposit entirely from downturns]]."),
        ("nov-rf-08", "[[Your {amount} emerges unscathed from any slump]] in {product}."),
    ),
    "performance_forecast": (
        ("nov-pf-01", "[[{stock:cap} is poised to surge {gain_pct} before the {month} results]]."),
        ("nov-pf-02", "[[I anticipate {stock} appreciating by {gain_pct} over the coming {months} months]]."),
        ("nov-pf-03", "[[{product:cap} will quadruple in value by {year}]]."),
        ("nov-pf-04", "[[{stock:cap} will soar to {price} come {month}]]."),
        ("nov-pf-05", "[[Our models have {stock} advancing {gain_pct} this season, and we expect it to materialise]]."),
        ("nov-pf-06", "[[{company:cap} is destined to climb {gain_pct} once the {month} contract lands]]."),
        ("nov-pf-07", "[[An upswing of {gain_pct} in {stock} is imminent]]."),
        ("nov-pf-08", "[[Holders of {stock} will pocket a windfall of {gain_pct} by {month}]]."),
    ),
    "regulatory_endorsement": (
        ("nov-re-01", "[[{regulator:cap} has accredited {product} as a preferred holding]]."),
        ("nov-re-02", "[[{product:cap} was vetted and ratified by {regulator}]]."),
        ("nov-re-03", "[[{regulator:cap} champions {product}]] for household savers."),
        ("nov-re-04", "[[{product:cap} enjoys the formal patronage of {regulator}]]."),
        ("nov-re-05", "[[Officials at {regulator} have commended {product} to retail savers]]."),
        ("nov-re-06", "[[{product:cap} bears the imprimatur of {regulator}]]."),
        ("nov-re-07", "{product:cap} is [[{regulator_approved_adj} vehicle]] for household savings."),
        ("nov-re-08", "[[{regulator:cap} lent its official support to {product}]]."),
    ),
}

NEGATIVES: tuple[Family, ...] = (
    ("nov-neg-01", "Nobody can pledge a fixed coupon on {product}; payments depend on the issuer."),
    ("nov-neg-02", "{regulator:cap} has not accredited {product}, so please remove that line from the brochure."),
    ("nov-neg-03", "The caterer has pledged to deliver the canapés by {time} for {event}."),
    ("nov-neg-04", "Ticket sales for {event} are poised to surge once the invitations go out."),
    ("nov-neg-05", "The new badge readers make the server room immune to tailgating, facilities say."),
    ("nov-neg-06", "{product:cap} offers no immunity from losses; your capital can shrink."),
    ("nov-neg-07", "Please file the {company} prospectus lodged with {regulator} in the shared folder."),
    ("nov-neg-08", "The quarterly valuation of {product} is unchanged at {nav_price} per unit after last month's slump in bond prices."),
    ("nov-neg-09", "I can't anticipate where {stock} will trade; projections aren't promises."),
    ("nov-neg-10", "The office plants look set to quadruple in size, so we need bigger pots."),
    ("nov-neg-11", "Officials at {regulator} published a consultation paper on {date}, so expect a surge of client questions."),
)
# fmt: on

NOVEL_PHRASE_MARKERS: tuple[str, ...] = (
    "contractually", "pledge", "pledges", "pledged", "coupon", "honoured", "whatever occurs",
    "underwritten", "accrues", "immutable", "irrespective", "unconditionally", "unbreakable",
    "immune", "immunity", "evaporate", "insulates", "nest egg", "untouchable", "preservation",
    "dent", "shields", "unscathed", "slump", "poised", "surge", "anticipate", "appreciating",
    "quadruple", "soar", "materialise", "destined", "upswing", "imminent", "windfall", "pocket",
    "accredited", "ratified", "vetted", "champions", "patronage", "commended", "imprimatur",
    "vehicle", "lent its official support", "canapés", "tailgating", "prospectus",
)  # fmt: skip
