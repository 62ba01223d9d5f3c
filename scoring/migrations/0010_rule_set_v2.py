"""Rule set v2: four seeded rules stop routing innocent mail, published as a new version.

Measured on hand-written mail (scoring/corpus/handwritten/dev.jsonl, the development set):
- RE-001 (and RE-003, the same words without "has") hit "the SEC approved the rule change moving
  US equity settlement to T+1": a regulator approving a rule, a listing or a merger is news, not
  an endorsement of a product;
- RE-002 hit "my U4 got approved by FINRA": it now needs a product or investment word nearby,
  as RE-001 and RE-003 already did;
- RF-004 hit the FSCS boilerplate "Eligible deposits are protected by the Financial Services
  Compensation Scheme up to £85,000": deposit-protection schemes state a fact, not a claim.

Like 0004, the rules are data copied here, so this migration keeps meaning the same thing
whatever the code becomes. It publishes v(max+1) from the active set only when that set is still
the untouched seed (v1 of 0004); a database whose admins have published their own rules keeps
them (the change is then theirs to make on the rules page).
"""

from django.db import migrations

SEED_NOTE = "Seed rules (migration 0004)."
NOTE = "Rule set v2 (migration 0010): RE-001, RE-002, RE-003 and RF-004 tightened against innocent mail."
_REGULATOR = (
    r"(?:SEC|FCA|FINRA|CFTC|ESMA|FDIC|Federal\s+Reserve|Bank\s+of\s+England|Treasury|"
    r"(?:the\s+)?regulators?|(?:the\s+)?government)"
)
_NEWS = r"(?!\s+(?:the\s+|a\s+|an\s+)?(?:rule|rules|amendments?|changes?|listings?|merger|acquisition|settlement|appointment))"
_SCHEMES = r"(?!\s+(?:by|under)\s+(?:the\s+)?(?:FSCS|FDIC|SIPC|Financial\s+Services\s+Compensation|Federal\s+Deposit|deposit\s+(?:guarantee|insurance)))"
_PRODUCT_TERMS = [
    "fund", "funds", "product*", "invest*", "portfolio*", "strateg*", "scheme*", "offering*", "token*",
    "coin*", "plan", "plans", "account*", "opportunit*", "stock*", "shares", "bond*", "note", "notes",
    "platform", "ETF", "trust", "this", "it",
]  # fmt: skip

# code -> (pattern, context terms, context window, description)
CHANGES = {
    "RE-001": (
        rf"\b{_REGULATOR}\s+(?:has\s+|have\s+|had\s+)?(?:fully\s+|officially\s+|personally\s+)?"
        r"(?:approved|endorsed|backed|certified|sanctioned|vetted|recommended|guaranteed|blessed|signed\s+off\s+on)\b"
        + _NEWS,
        None,  # context terms unchanged
        None,
        "'the SEC approved this fund' (not 'the SEC filing is attached', not 'approved the rule change')",
    ),
    "RE-002": (
        rf"\b(?:approved|endorsed|backed|certified|sanctioned|recommended|guaranteed|vetted)\s+by\s+(?:the\s+)?{_REGULATOR}\b",
        _PRODUCT_TERMS,
        8,
        "'approved by the FCA', 'backed by the government', near a product word",
    ),
    "RE-003": (
        r"\b(?:SEC|FCA|FINRA|CFTC|ESMA|regulator|government)[- ](?:approved|endorsed|backed|certified|sanctioned)\b"
        + _NEWS,
        None,
        None,
        "'an SEC-approved fund' (not 'the SEC approved the rule change')",
    ),
    "RF-004": (
        r"\b(?:capital|principal|investments?|savings|deposits?|money)\s+(?:is|are|will\s+be|remains?|stays?)\s+"
        r"(?:fully\s+|completely\s+|totally\s+|100%\s+|always\s+|perfectly\s+)?(?:protected|safe|secure|risk[- ]?free|guaranteed)\b"
        + _SCHEMES,
        None,
        None,
        "'your capital is fully protected', 'your money is safe' (not the FSCS/FDIC deposit-protection facts)",
    ),
}


def publish(apps, schema_editor):
    RuleSet = apps.get_model("scoring", "RuleSet")
    Rule = apps.get_model("scoring", "Rule")
    active = RuleSet.objects.filter(is_active=True).first()
    if active is None or active.version != 1 or active.note != SEED_NOTE:
        return  # no seed, or the admins' own rules: leave them alone
    version = (RuleSet.objects.order_by("-version").values_list("version", flat=True).first() or 0) + 1
    active.is_active = False
    active.save(update_fields=["is_active"])
    new = RuleSet.objects.create(version=version, is_active=True, note=NOTE)
    for rule in Rule.objects.filter(rule_set=active).order_by("code"):
        pattern, terms, window, description = CHANGES.get(rule.code, (None, None, None, None))
        Rule.objects.create(
            rule_set=new,
            code=rule.code,
            claim_type_id=rule.claim_type_id,
            pattern=pattern or rule.pattern,
            context_terms=list(terms) if terms is not None else rule.context_terms,
            context_window=window or rule.context_window,
            negation_guard=rule.negation_guard,
            enabled=rule.enabled,
            description=description or rule.description,
        )


def unpublish(apps, schema_editor):
    RuleSet = apps.get_model("scoring", "RuleSet")
    new = RuleSet.objects.filter(note=NOTE).first()
    if new is None:
        return
    was_active = new.is_active
    new.delete()
    if was_active:
        RuleSet.objects.filter(version=1, note=SEED_NOTE).update(is_active=True)


class Migration(migrations.Migration):
    dependencies = [("scoring", "0009_prediction_segments")]
    operations = [migrations.RunPython(publish, unpublish)]
