"""Rule set v3: the regulators named in full, "reviewed and approved", and the risk-free rate.

Measured on the hand-written development sets (scoring/corpus/handwritten/dev*.jsonl) and the
corpus's val and test splits, with the model the test suite trains:
- RE-001 and RE-002 knew a few regulators, by their initials only: "approved by the Financial
  Conduct Authority", "MAS has endorsed both the fund manager", "FINRA has reviewed and approved
  this offering" and "MAS endorses it" (a chat line) went unrouted. RE-002 now also knows the
  SEC, the FCA, the PRA and Singapore's MAS by their full names, both know MAS, Germany's BaFin
  and Australia's ASIC, RE-001 reads "has reviewed and approved" and the present tense
  ("endorses"), and a new rule RE-004 is RE-001 for the regulators named in full ("The Financial
  Conduct Authority has endorsed our investment strategy": RE-001's pattern would pass the 500
  characters an admin's edit may have). Four development-set claims more reach review (one of 88 in dev.jsonl, three of 70 in dev_mixed);
  on the corpus's test split one claim more and two innocent messages more (scam warnings that
  put the phrase in single quotes, which the quote guard does not read); val unchanged.
- RF-001 hit "the risk-free rate in the Sharpe ratio calculation": the rate of a risk-free asset
  is a term of finance, not a promise ("a risk-free rate of return of 8%" still hits).

Like 0004 and 0010, the rules are data copied here, so this migration keeps meaning the same thing
whatever the code becomes. It publishes v(max+1) from the active set only when that set is still
the untouched v2 of 0010; a database whose admins have published their own rules keeps them (the
change is then theirs to make on the rules page).
"""

from django.db import migrations

V2_NOTE = "Rule set v2 (migration 0010): RE-001, RE-002, RE-003 and RF-004 tightened against innocent mail."
NOTE = (
    "Rule set v3 (migration 0018): RE-001 and RE-002 know more regulators (RE-002 by their full names) "
    "and RE-001 'reviewed and approved'; RF-001 skips the risk-free rate."
)
_REGULATOR = (
    r"(?:SEC|FCA|FINRA|CFTC|ESMA|FDIC|Federal\s+Reserve|Bank\s+of\s+England|Treasury|"
    r"Securities\s+and\s+Exchange\s+Commission|Financial\s+Conduct\s+Authority|"
    r"Prudential\s+Regulation\s+Authority|MAS|Monetary\s+Authority\s+of\s+Singapore|BaFin|ASIC|"
    r"(?:the\s+)?regulators?|(?:the\s+)?government)"
)
# RE-001's subject: v2's regulators and MAS, BaFin and ASIC (a pattern has at most 500 characters;
# the full names are RE-002's, "approved by the Financial Conduct Authority")
_SUBJECT = (
    r"(?:SEC|FCA|FINRA|CFTC|ESMA|FDIC|MAS|BaFin|ASIC|Federal\s+Reserve|Bank\s+of\s+England|Treasury|"
    r"(?:the\s+)?regulators?|(?:the\s+)?government)"
)
_NEWS = r"(?!\s+(?:the\s+|a\s+|an\s+)?(?:rule|rules|amendments?|changes?|listings?|merger|acquisition|settlement|appointment))"

_FULL_NAMES = (
    r"(?:Securities\s+and\s+Exchange\s+Commission|Financial\s+Conduct\s+Authority|"
    r"Prudential\s+Regulation\s+Authority|Monetary\s+Authority\s+of\s+Singapore)"
)
_VERBS = (
    r"(?:(?:reviewed|examined|vetted)\s+and\s+)?"
    r"(?:approved|approves|endorsed|endorses|backed|backs|certified|sanctioned|vetted|recommended|"
    r"recommends|guaranteed|blessed|signed\s+off\s+on)\b"
)

# code -> (pattern, description)
CHANGES = {
    "RE-001": (
        rf"\b{_SUBJECT}\s+(?:has\s+|have\s+|had\s+)?(?:fully\s+|officially\s+|personally\s+)?"
        r"(?:(?:reviewed|examined|vetted)\s+and\s+)?"
        r"(?:approved|approves|endorsed|endorses|backed|backs|certified|sanctioned|vetted|recommended|"
        r"guaranteed|blessed|signed\s+off\s+on)\b" + _NEWS,
        "'the SEC approved this fund', 'MAS endorses it', 'FINRA has reviewed and approved this "
        "offering' (not 'approved the rule change')",
    ),
    "RE-002": (
        rf"\b(?:approved|endorsed|backed|certified|sanctioned|recommended|guaranteed|vetted)\s+by\s+(?:the\s+)?{_REGULATOR}\b",
        "'approved by the FCA', 'approved by the Financial Conduct Authority', near a product word",
    ),
    "RF-001": (
        r"\brisk[- ]?free\b(?!\s+(?:\d+[- ]?days?[- ]?)?(?:trial|return\s+policy|cancellation|upgrade|demo))"
        r"(?!\s+(?:interest\s+)?rates?\b(?!\s+of\s+return))",
        "'risk-free investment' (not 'risk-free trial', not 'the risk-free rate')",
    ),
}


# a new rule, with RE-001's claim type, context terms, window and guard: code -> (pattern, description)
ADDED = {
    "RE-004": (
        rf"\b{_FULL_NAMES}\s+(?:has\s+|have\s+|had\s+)?{_VERBS}" + _NEWS,
        "RE-001 for the regulators named in full: 'the Financial Conduct Authority has endorsed our strategy'",
    ),
}


def publish(apps, schema_editor):
    RuleSet = apps.get_model("scoring", "RuleSet")
    Rule = apps.get_model("scoring", "Rule")
    active = RuleSet.objects.filter(is_active=True).first()
    if active is None or active.note != V2_NOTE:
        return  # no seed, or the admins' own rules: leave them alone
    version = (RuleSet.objects.order_by("-version").values_list("version", flat=True).first() or 0) + 1
    active.is_active = False
    active.save(update_fields=["is_active"])
    new = RuleSet.objects.create(version=version, is_active=True, note=NOTE)
    for rule in Rule.objects.filter(rule_set=active).order_by("code"):
        pattern, description = CHANGES.get(rule.code, (None, None))
        Rule.objects.create(
            rule_set=new,
            code=rule.code,
            claim_type_id=rule.claim_type_id,
            pattern=pattern or rule.pattern,
            context_terms=rule.context_terms,
            context_window=rule.context_window,
            negation_guard=rule.negation_guard,
            enabled=rule.enabled,
            description=description or rule.description,
        )
        if rule.code == "RE-001":
            for code, (added_pattern, added_description) in ADDED.items():
                Rule.objects.create(
                    rule_set=new,
                    code=code,
                    claim_type_id=rule.claim_type_id,
                    pattern=added_pattern,
                    context_terms=rule.context_terms,
                    context_window=rule.context_window,
                    negation_guard=rule.negation_guard,
                    enabled=rule.enabled,
                    description=added_description,
                )


def unpublish(apps, schema_editor):
    RuleSet = apps.get_model("scoring", "RuleSet")
    new = RuleSet.objects.filter(note=NOTE).first()
    if new is None:
        return
    was_active = new.is_active
    new.delete()
    if was_active:
        RuleSet.objects.filter(note=V2_NOTE).update(is_active=True)


class Migration(migrations.Migration):
    dependencies = [("scoring", "0017_message_deferral_and_requeue_counts")]
    operations = [migrations.RunPython(publish, unpublish)]
