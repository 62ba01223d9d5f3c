"""Seed rule set v1 (active): a cheap, high-precision net of phrase rules per claim type.

The rules are data, copied here (not imported from app code) so that this migration keeps
meaning the same thing whatever the code becomes. They catch the plain phrasings and will miss
euphemisms on purpose: "model flags no rule explains" is a monitored signal.
Patterns are case-insensitive Python regular expressions; see scoring/rules.py for how context
terms (a trailing * is a prefix) and the negation guard work.
"""

from django.db import migrations

# Building blocks, spelled out once so each rule below reads as a sentence.
_GAIN = r"(?:returns?|yields?|profits?|income|gains?|payouts?|interest|dividends?|earnings)"
_REGULATOR = (
    r"(?:SEC|FCA|FINRA|CFTC|ESMA|FDIC|Federal\s+Reserve|Bank\s+of\s+England|Treasury|"
    r"(?:the\s+)?regulators?|(?:the\s+)?government)"
)
_INVEST_TERMS = [
    "invest*",
    "capital",
    "principal",
    "fund",
    "funds",
    "portfolio*",
    "savings",
    "deposit*",
    "return*",
    "yield*",
    "profit*",
    "income",
    "bond*",
    "stock*",
    "shares",
    "equity",
    "equities",
    "wealth",
    "asset*",
    "pension*",
    "retirement",
    "crypto*",
    "token*",
    "coin*",
    "trading",
    "trade",
    "trades",
    "money",
]
_PRODUCT_TERMS = [
    "fund",
    "funds",
    "product*",
    "invest*",
    "portfolio*",
    "strateg*",
    "scheme*",
    "offering*",
    "token*",
    "coin*",
    "plan",
    "plans",
    "account*",
    "opportunit*",
    "stock*",
    "shares",
    "bond*",
    "note",
    "notes",
    "platform",
    "ETF",
    "trust",
]

# (code, claim type, pattern, context terms, context window, description)
RULES = [
    # --- guaranteed_returns ------------------------------------------------------------------
    (
        "GR-001",
        "guaranteed_returns",
        rf"\bguarantee[ds]?\s+(?:(?:you|a|an|the|your|our|[\d.,]+\s?%|\w+ly|high|fixed|steady|stable|"
        rf"solid|annual|monthly|minimum|double[- ]digit|strong|big)\s+){{0,3}}{_GAIN}\b"
        r"(?!\s+(?:policy|policies|label|form|window|address|process|department|team|portal|desk))",
        [],
        8,
        "'guaranteed (high) returns', 'we guarantee a 9% yield'",
    ),
    (
        "GR-002",
        "guaranteed_returns",
        rf"\b{_GAIN}\s+(?:are|is|r|will\s+be|remain|stay|stays)\s+"
        r"(?:fully\s+|completely\s+|absolutely\s+|100%\s+|always\s+)?(?:guaranteed|certain|assured|locked[- ]in)\b",
        [],
        8,
        "'returns are guaranteed', 'the payouts are certain'",
    ),
    (
        "GR-003",
        "guaranteed_returns",
        r"\b(?:[\d.,]+\s?%|double[- ]digit)\s+(?:(?:a|per|each|every|annual|annually|monthly|yearly|"
        r"year|month|return|returns|yield|interest|p\.?a\.?)\s+){0,3}(?:guaranteed|assured|locked[- ]in)\b",
        _INVEST_TERMS,
        10,
        "'8% a year guaranteed' near an investment word",
    ),
    (
        "GR-004",
        "guaranteed_returns",
        rf"\b(?:assured|certain|sure[- ]fire|locked[- ]in|promised)\s+{_GAIN}\b",
        [],
        8,
        "'assured income', 'locked-in profits', 'certain returns'",
    ),
    # --- risk_free ---------------------------------------------------------------------------
    (
        "RF-001",
        "risk_free",
        r"\brisk[- ]?free\b(?!\s+(?:\d+[- ]?days?[- ]?)?(?:trial|return\s+policy|cancellation|upgrade|demo))",
        [*_INVEST_TERMS, "opportunit*"],
        6,
        "'risk-free investment' (not 'risk-free trial')",
    ),
    (
        "RF-002",
        "risk_free",
        r"\b(?:zero|no|without\s+any)\s+(?:downside\s+)?risk\b(?!\s+(?:assessment|of\s+(?:delay|missing)))",
        _INVEST_TERMS,
        8,
        "'zero risk to your capital', 'no risk' near an investment word",
    ),
    (
        "RF-003",
        "risk_free",
        r"\b(?:can\s?not|can't|cant|won't|will\s+not|never)\s+(?:ever\s+)?lose\b",
        ["money", "capital", "principal", "invest*", "savings", "a cent", "a penny", "a dime", "deposit*"],
        6,
        "'you cannot lose money'",
    ),
    (
        "RF-004",
        "risk_free",
        r"\b(?:capital|principal|investments?|savings|deposits?|money)\s+(?:is|are|will\s+be|remains?|stays?)\s+"
        r"(?:fully\s+|completely\s+|totally\s+|100%\s+|always\s+|perfectly\s+)?(?:protected|safe|secure|risk[- ]?free|guaranteed)\b",
        [],
        8,
        "'your capital is fully protected', 'your money is safe'",
    ),
    # --- performance_forecast ----------------------------------------------------------------
    (
        "PF-001",
        "performance_forecast",
        r"\b(?:will|shall|(?:is|are)\s+(?:going|set|poised|bound|expected|guaranteed)\s+to)\s+"
        r"(?:easily\s+|definitely\s+|certainly\s+|surely\s+|at\s+least\s+)?(?:double|triple|quadruple|10x|skyrocket|soar|moon)\b",
        _INVEST_TERMS + ["price", "value"],
        8,
        "'this stock will double by March'",
    ),
    (
        "PF-002",
        "performance_forecast",
        r"\b(?:will|(?:is|are)\s+(?:going|set|poised|bound|expected)\s+to)\s+(?:easily\s+)?"
        r"(?:gain|return|grow|rise|climb|jump|deliver|earn|make|yield|appreciate)\s+"
        r"(?:you\s+)?(?:at\s+least\s+|over\s+|more\s+than\s+|another\s+)?[$£€]?[\d.,]+\s?(?:%|percent|x\b)",
        [*_INVEST_TERMS, "price", "value"],
        8,
        "'will gain 20%', 'is set to rise 15 percent'",
    ),
    (
        "PF-003",
        "performance_forecast",
        r"\b(?:expect(?:ed)?|forecast(?:ing)?|project(?:ed|ing)?|predict(?:ed|ing)?|anticipat(?:e|ed|ing)|target(?:ed|ing)?)\s+"
        r"(?:(?:a|an|the|your|our|annual|yearly|at\s+least)\s+){0,3}(?:returns?|gains?|growth|upside|yield)\s+"
        r"of\s+(?:at\s+least\s+|over\s+)?[\d.,]+\s?(?:%|percent)",
        [],
        8,
        "'we expect returns of 15%'",
    ),
    (
        "PF-004",
        "performance_forecast",
        r"\b(?:price|stock|shares?|fund|portfolio|token|coin|value)\s+(?:will|is\s+going\s+to|is\s+set\s+to)\s+"
        r"(?:hit|reach|top|exceed|pass|break)\s+[$£€]?\d[\d.,]*(?:\s?(?:%|k\b|m\b|bn\b|million\b|billion\b))?",
        [],
        8,
        "'the stock will hit $200'",
    ),
    # --- regulatory_endorsement --------------------------------------------------------------
    (
        "RE-001",
        "regulatory_endorsement",
        rf"\b{_REGULATOR}\s+(?:has\s+|have\s+|had\s+)?(?:fully\s+|officially\s+|personally\s+)?"
        r"(?:approved|endorsed|backed|certified|sanctioned|vetted|recommended|guaranteed|blessed|signed\s+off\s+on)\b",
        _PRODUCT_TERMS + ["this", "it", "us"],
        6,
        "'the SEC approved this fund' (not 'the SEC filing is attached')",
    ),
    (
        "RE-002",
        "regulatory_endorsement",
        rf"\b(?:approved|endorsed|backed|certified|sanctioned|recommended|guaranteed|vetted)\s+by\s+(?:the\s+)?{_REGULATOR}\b",
        [],
        8,
        "'approved by the FCA', 'backed by the government'",
    ),
    (
        "RE-003",
        "regulatory_endorsement",
        r"\b(?:SEC|FCA|FINRA|CFTC|ESMA|regulator|government)[- ](?:approved|endorsed|backed|certified|sanctioned)\b",
        _PRODUCT_TERMS,
        6,
        "'an SEC-approved fund'",
    ),
]


def seed(apps, schema_editor):
    ClaimType = apps.get_model("scoring", "ClaimType")
    RuleSet = apps.get_model("scoring", "RuleSet")
    Rule = apps.get_model("scoring", "Rule")
    if RuleSet.objects.exists():
        return  # a database that already has rule sets keeps them
    claim_types = {ct.code: ct for ct in ClaimType.objects.all()}
    rule_set = RuleSet.objects.create(version=1, is_active=True, note="Seed rules (migration 0004).")
    Rule.objects.bulk_create(
        Rule(
            rule_set=rule_set,
            code=code,
            claim_type=claim_types[claim_type],
            pattern=pattern,
            context_terms=list(terms),
            context_window=window,
            negation_guard=True,
            enabled=True,
            description=description,
        )
        for code, claim_type, pattern, terms, window, description in RULES
    )


def unseed(apps, schema_editor):
    RuleSet = apps.get_model("scoring", "RuleSet")
    RuleSet.objects.filter(version=1, note="Seed rules (migration 0004).").delete()


class Migration(migrations.Migration):
    dependencies = [("scoring", "0003_message_routing_fields")]
    operations = [migrations.RunPython(seed, unseed)]
