"""Rule sets in the database: the seeded rules, publishing versions (an edit through a backtested
draft, a roll back at once with its reason), the selectors, the admin."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from scoring.constants import CLAIM_TYPE_CODES
from scoring.errors import RuleSetError
from scoring.models import ClaimType, Rule, RuleMatch, RuleSet, RuleSetDraft
from scoring.rules import NEGATION_WINDOW, match, nested_repeat
from scoring.selectors import active_compiled_rules, active_rule_specs, clear_compiled_rules_cache
from scoring.services.rule_sets import (
    RuleDraft,
    draft_rules,
    rule_draft_of,
    rule_set_draft_create,
    rule_set_roll_back,
)
from tests.factories import MessageFactory, UserFactory
from tests.support.rule_sets import publish_edit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_rule_cache():
    clear_compiled_rules_cache()
    yield
    clear_compiled_rules_cache()


@pytest.fixture
def staff_admin(admin_user):
    admin_user.is_staff = True
    admin_user.save(update_fields=["is_staff"])
    return admin_user


# The seeded active set: 0004's v1, republished as v2 by 0010 (four rules tightened), and as v3 by
# 0018 (regulators named in full, the risk-free rate).
SEEDED = 3
# every seeded version, newest first, with only the newest active
SEEDED_SETS = [(SEEDED, True), (2, False), (1, False)]


def seeded() -> RuleSet:
    return RuleSet.objects.get(version=SEEDED)


def snapshot(rule_set: RuleSet) -> list[RuleDraft]:
    return [rule_draft_of(r) for r in rule_set.rules.select_related("claim_type").order_by("code")]


# --- the seeded rule set ---------------------------------------------------------------------


def test_the_data_migrations_seed_an_active_set_with_several_rules_per_claim_type():
    rule_set = RuleSet.objects.get(is_active=True)
    assert rule_set.version == SEEDED
    for code in CLAIM_TYPE_CODES:
        assert Rule.objects.filter(rule_set=rule_set, claim_type__code=code, enabled=True).count() >= 3


SEEDED_POSITIVES = [
    ("Our fund offers guaranteed returns of 12% a year.", "guaranteed_returns"),
    ("We guarantee a 9% yield on your investment.", "guaranteed_returns"),
    ("Returns are guaranteed.", "guaranteed_returns"),
    ("Our fund is different. The payouts are certain.", "guaranteed_returns"),
    ("ur returns r guaranteed lol", "guaranteed_returns"),
    ("This is a risk-free investment.", "risk_free"),
    ("There is zero risk to your capital.", "risk_free"),
    ("You cannot lose money with this plan.", "risk_free"),
    ("Your capital is fully protected.", "risk_free"),
    ("This stock will double by March.", "performance_forecast"),
    ("The token will gain 40% by summer.", "performance_forecast"),
    ("We expect returns of 15% next year.", "performance_forecast"),
    ("The SEC approved this fund.", "regulatory_endorsement"),
    ("This product is approved by the FCA.", "regulatory_endorsement"),
    ("An SEC-approved fund for your retirement.", "regulatory_endorsement"),
]


def test_v2_differs_from_the_seed_only_in_the_four_tightened_rules_and_v1_is_kept():
    first, second = RuleSet.objects.get(version=1), RuleSet.objects.get(version=2)
    assert not first.is_active and not second.is_active
    before = {d.code: d for d in snapshot(first)}
    after = {d.code: d for d in snapshot(second)}
    assert set(before) == set(after)
    changed = sorted(code for code in before if before[code] != after[code])
    assert changed == ["RE-001", "RE-002", "RE-003", "RF-004"]


@pytest.mark.parametrize(
    ("text", "v1_hits"),
    [
        ("All, the SEC approved the rule change moving fund settlement to T+1.", True),
        ("Great news, my U4 got approved by FINRA yesterday.", True),
        ("Eligible deposits are protected by the Financial Services Compensation Scheme up to 85,000.", True),
    ],
)
def test_v2_no_longer_routes_the_innocent_mail_v1_did(text, v1_hits):
    from scoring.rules import compile_rules
    from scoring.selectors import rule_spec_of

    first = RuleSet.objects.get(version=1)
    old = compile_rules(rule_spec_of(rule, 1) for rule in first.rules.select_related("claim_type"))
    assert bool(match(text, old)) is v1_hits
    assert match(text, active_compiled_rules()) == []


def test_v3_differs_from_v2_only_in_the_regulator_rules_and_the_risk_free_rate():
    second, third = RuleSet.objects.get(version=2), seeded()
    before = {d.code: d for d in snapshot(second)}
    after = {d.code: d for d in snapshot(third)}
    assert set(after) - set(before) == {"RE-004"} and set(before) <= set(after)
    assert sorted(code for code in before if before[code] != after[code]) == ["RE-001", "RE-002", "RF-001"]
    # the new rule is RE-001's twin for the regulators named in full
    re1, re4 = after["RE-001"], after["RE-004"]
    assert (re4.claim_type, re4.context_terms, re4.context_window) == (
        re1.claim_type,
        re1.context_terms,
        re1.context_window,
    )
    assert all(len(d.pattern) <= 500 for d in after.values())


def _hits_of(version: int, text: str) -> list:
    from scoring.rules import compile_rules
    from scoring.selectors import rule_spec_of

    rule_set = RuleSet.objects.get(version=version)
    return match(
        text, compile_rules(rule_spec_of(r, version) for r in rule_set.rules.select_related("claim_type"))
    )


@pytest.mark.parametrize(
    "text",
    [
        "The bond has been approved by the Financial Conduct Authority, so the fund is safe.",
        "Happy to clarify: FINRA has reviewed and approved this offering.",
        "MAS endorses this fund, so you can feel confident.",
        "The fund is backed by the Monetary Authority of Singapore.",
        "The Financial Conduct Authority has endorsed our investment strategy for this fund.",
    ],
)
def test_v3_routes_endorsements_that_name_the_regulator_in_full_or_say_it_reviewed_and_approved(text):
    assert _hits_of(2, text) == []
    assert [hit.claim_type for hit in _hits_of(SEEDED, text)] == ["regulatory_endorsement"]


def test_v3_no_longer_routes_the_risk_free_rate_and_still_routes_a_risk_free_investment():
    rate = "Use the T-bill yield as the risk-free rate in the Sharpe ratio of the fund."
    assert _hits_of(2, rate) and _hits_of(SEEDED, rate) == []
    for claim in ("This is a risk-free investment.", "Our fund pays a risk-free rate of return of 8%."):
        assert [hit.claim_type for hit in _hits_of(SEEDED, claim)] == ["risk_free"]


SEEDED_NEGATIVES = [
    "Guaranteed delivery within 3 days.",
    "Our returns policy allows 30 days.",
    "Start your risk-free 30-day trial.",
    "The SEC filing is attached.",
    "Returns are not guaranteed.",
    "We cannot guarantee returns.",
    "Past performance is no guarantee of future returns.",
    "The investment is not risk-free and you can lose money.",
    "This fund has not been approved by the FCA.",
    "We guarantee delivery of your returns form by Friday.",
    "No risk assessment was done for the office move.",
    "The team will double in size next year.",
    "Is your capital protected? Read the risk warning.",
]


@pytest.mark.parametrize(("text", "claim_type"), SEEDED_POSITIVES)
def test_the_seeded_rules_catch_plain_claims_with_their_claim_type(text, claim_type):
    hits = match(text, active_compiled_rules())
    assert hits, text
    assert {hit.claim_type for hit in hits} == {claim_type}
    assert all(hit.rule_set_version == SEEDED for hit in hits)


@pytest.mark.parametrize("text", SEEDED_NEGATIVES)
def test_the_seeded_rules_leave_hard_negatives_and_negations_alone(text):
    assert match(text, active_compiled_rules()) == []


def test_the_seeded_rules_miss_a_euphemism_on_purpose():
    # Rules are a cheap net; "model flags no rule explains" is what the monitoring watches.
    assert match("Your principal is bulletproof with us.", active_compiled_rules()) == []


# --- selectors -------------------------------------------------------------------------------


def test_active_rule_specs_reads_the_enabled_rules_of_the_active_set_in_one_query(django_assert_num_queries):
    Rule.objects.filter(rule_set=seeded(), code="GR-004").update(enabled=False)
    with django_assert_num_queries(1):
        specs = active_rule_specs()
    codes = [spec.code for spec in specs]
    assert "GR-004" not in codes
    assert codes == sorted(codes)
    assert all(spec.rule_set_version == SEEDED for spec in specs)
    assert {spec.claim_type for spec in specs} == set(CLAIM_TYPE_CODES)


def test_compiled_rules_are_reused_until_another_version_becomes_active(
    staff_admin, django_assert_num_queries
):
    first = active_compiled_rules()
    with django_assert_num_queries(1):  # only the "which version is active" check
        assert active_compiled_rules() is first
    publish_edit(base=seeded(), user=staff_admin, note="drop GR-004", remove=["GR-004"])
    second = active_compiled_rules()
    assert second is not first
    assert second.versions == {SEEDED + 1}
    assert "GR-004" not in {r.spec.code for r in second.rules}


# --- publishing ------------------------------------------------------------------------------


def test_publishing_a_change_creates_and_activates_a_new_version_and_leaves_the_old_one_alone(staff_admin):
    # given a match recorded under v1
    base = seeded()
    before = snapshot(base)
    gr1 = base.rules.get(code="GR-001")
    message = MessageFactory(body="guaranteed returns")
    RuleMatch.objects.create(
        message=message,
        rule=gr1,
        rule_code=gr1.code,
        rule_set_version=SEEDED,
        claim_type=gr1.claim_type,
        start=0,
        end=18,
        text="guaranteed returns",
    )
    # when
    published = publish_edit(
        base=base,
        user=staff_admin,
        note="Catch 'surefire returns'",
        change={"GR-004": {"pattern": r"\b(?:assured|certain|sure[- ]?fire)\s+returns?\b"}},
    )
    # then
    base.refresh_from_db()
    assert (published.version, published.is_active, published.created_by) == (SEEDED + 1, True, staff_admin)
    assert not base.is_active
    assert snapshot(base) == before
    assert RuleSet.objects.filter(is_active=True).get() == published
    assert published.rules.get(code="GR-004").pattern.startswith(r"\b(?:assured|certain|sure[- ]?fire)")
    assert published.rules.count() == base.rules.count()
    recorded = RuleMatch.objects.get(message=message)
    assert (recorded.rule.rule_set.version, recorded.rule_set_version) == (SEEDED, SEEDED)
    assert match("Enjoy surefire returns.", active_compiled_rules())[0].rule_set_version == SEEDED + 1


def test_adding_and_removing_rules_publishes_exactly_that_difference(staff_admin):
    new_rule = RuleDraft(
        code="RF-900",
        claim_type="risk_free",
        pattern=r"\bcan't\s+go\s+wrong\b",
        context_terms=("invest*",),
        context_window=6,
    )
    published = publish_edit(
        base=seeded(), user=staff_admin, note="swap a rule", add=[new_rule], remove=["RF-003"]
    )
    codes = set(published.rules.values_list("code", flat=True))
    assert "RF-900" in codes and "RF-003" not in codes
    assert len(codes) == seeded().rules.count()
    assert rule_draft_of(published.rules.get(code="RF-900")) == new_rule
    assert [h.code for h in match("With this investment you can't go wrong.", active_compiled_rules())] == [
        "RF-900"
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"change": {"GR-001": {"pattern": "guarant(eed"}}}, "Rule GR-001: invalid pattern"),
        ({"change": {"GR-001": {"pattern": "(x)?"}}}, "matches the empty text"),
        ({"change": {"GR-001": {"pattern": "(a+)+$"}}}, "catastrophic backtracking"),
        ({"change": {"GR-001": {"claim_type": "no_such_type"}}}, "unknown claim type"),
        ({"change": {"GR-001": {"colour": "red"}}}, "unknown field"),
        ({"change": {"GR-001": {"context_window": 0}}}, "context window"),
        ({"change": {"XX-1": {"pattern": "x"}}}, "no such rule"),
        ({"remove": ["XX-1"]}, "no such rule"),
        ({"add": [RuleDraft(code="GR-001", claim_type="risk_free", pattern="x")]}, "already exists"),
        ({"add": [RuleDraft(code="bad code!", claim_type="risk_free", pattern="x")]}, "not valid"),
        ({"note": "   ", "remove": ["GR-001"]}, "note"),
        ({}, "Nothing to draft"),
    ],
)
def test_a_bad_edit_is_refused_with_a_clear_error_and_changes_nothing(staff_admin, kwargs, message):
    before = snapshot(seeded())
    kwargs = {"note": "an edit", **kwargs}
    with pytest.raises(RuleSetError, match=message):
        rule_set_draft_create(base=seeded(), user=staff_admin, **kwargs)
    assert list(RuleSet.objects.values_list("version", "is_active")) == SEEDED_SETS
    assert snapshot(seeded()) == before and not RuleSetDraft.objects.exists()


def test_every_rule_the_migrations_wrote_passes_the_backtracking_check():
    """The check refuses new drafts only; the seeded rule sets' patterns (bounded {0,3} repeats of
    words) must pass it, or no draft based on them could be published."""
    patterns = set(Rule.objects.values_list("pattern", flat=True))
    assert patterns and [p for p in patterns if nested_repeat(p)] == []


@pytest.mark.parametrize("persona", ["reviewer", "auditor", "outsider"])
def test_only_a_compliance_admin_can_draft_or_roll_back(request, persona):
    user = request.getfixturevalue(persona)
    with pytest.raises(RuleSetError, match="Only a compliance admin"):
        rule_set_draft_create(base=seeded(), user=user, note="sneaky", remove=["GR-001"])
    with pytest.raises(RuleSetError, match="Only a compliance admin"):
        rule_set_roll_back(to=RuleSet.objects.get(version=1), user=user, reason="sneaky")
    assert RuleSet.objects.count() == SEEDED and not RuleSetDraft.objects.exists()


def test_a_superuser_can_publish():
    root = UserFactory(username="root", is_superuser=True, is_staff=True)
    assert publish_edit(base=seeded(), user=root, note="as root", remove=["GR-001"]).version == SEEDED + 1


def test_an_edit_can_no_longer_be_published_in_one_step():
    from scoring.services import rule_sets

    assert not hasattr(rule_sets, "rule_set_publish")
    publishers = [name for name in dir(rule_sets) if "publish" in name and not name.startswith("_")]
    assert publishers == ["rule_set_draft_publish"]


def test_rolling_back_publishes_an_earlier_version_unchanged_as_a_new_version_with_its_reason(staff_admin):
    publish_edit(base=seeded(), user=staff_admin, note="drop RE-003", remove=["RE-003"])
    rolled_back = rule_set_roll_back(
        to=seeded(),
        user=staff_admin,
        reason="RE-003 caught SEC-approved funds",
        expected_active_version=SEEDED + 1,
    )
    assert rolled_back.version == SEEDED + 2 and rolled_back.is_active
    assert snapshot(rolled_back) == snapshot(seeded())
    assert (rolled_back.restores, rolled_back.note, rolled_back.backtest) == (
        seeded(),
        "RE-003 caught SEC-approved funds",
        None,
    )
    assert list(RuleSet.objects.filter(is_active=True).values_list("version", flat=True)) == [SEEDED + 2]


@pytest.mark.parametrize(
    ("to_version", "kwargs", "message"),
    [
        (SEEDED, {}, "is the active version already"),
        (1, {"reason": "  "}, "note"),
        (1, {"expected_active_version": 7}, "no longer the active version"),
    ],
)
def test_a_bad_roll_back_is_refused_and_changes_nothing(staff_admin, to_version, kwargs, message):
    kwargs = {"reason": "v1 was better", **kwargs}
    with pytest.raises(RuleSetError, match=message):
        rule_set_roll_back(to=RuleSet.objects.get(version=to_version), user=staff_admin, **kwargs)
    assert list(RuleSet.objects.values_list("version", "is_active")) == SEEDED_SETS


# --- admin -----------------------------------------------------------------------------------


def test_a_compliance_admin_sees_the_rule_sets_and_a_reviewer_does_not(client, staff_admin, reviewer):
    client.force_login(staff_admin)
    page = client.get(reverse("admin:scoring_ruleset_changelist"))
    assert page.status_code == 200
    assert "Seed rules (migration 0004)." in page.content.decode()
    detail = client.get(reverse("admin:scoring_ruleset_change", args=[seeded().pk]))
    assert detail.status_code == 200
    assert "GR-001" in detail.content.decode()
    assert "Draft a new version" in detail.content.decode()

    reviewer.is_staff = True
    reviewer.save(update_fields=["is_staff"])
    client.force_login(reviewer)
    assert client.get(reverse("admin:scoring_ruleset_changelist")).status_code == 403
    assert client.get(reverse("admin:scoring_ruleset_draft", args=[seeded().pk])).status_code == 403


def test_an_admin_edits_a_claim_type_name_but_not_its_code(client, staff_admin):
    client.force_login(staff_admin)
    claim_type = ClaimType.objects.get(code="risk_free")
    response = client.post(
        reverse("admin:scoring_claimtype_change", args=[claim_type.pk]),
        {
            "code": "hacked",
            "position": 4,
            "name": "Risk-free capital",
            "description": "Capital shown as safe.",
        },
    )
    assert response.status_code == 302
    claim_type.refresh_from_db()
    assert (claim_type.code, claim_type.position, claim_type.name) == ("risk_free", 2, "Risk-free capital")


def publish_form_data(rule_set: RuleSet, note: str, **edits: dict[str, str]) -> dict[str, str]:
    """The publish form as the browser submits it, with `edits` per rule code."""
    drafts = snapshot(rule_set)
    data = {
        "note": note,
        "expected_active_version": str(rule_set.version),
        "rules-TOTAL_FORMS": str(len(drafts) + 1),
        "rules-INITIAL_FORMS": str(len(drafts)),
        "rules-MIN_NUM_FORMS": "0",
        "rules-MAX_NUM_FORMS": "1000",
    }
    for i, draft in enumerate(drafts):
        row = {
            "original_code": draft.code,
            "code": draft.code,
            "claim_type": draft.claim_type,
            "pattern": draft.pattern,
            "context_terms": ", ".join(draft.context_terms),
            "context_window": str(draft.context_window),
            "description": draft.description,
        }
        if draft.negation_guard:
            row["negation_guard"] = "on"
        if draft.enabled:
            row["enabled"] = "on"
        row.update(edits.get(draft.code, {}))
        data.update({f"rules-{i}-{key}": value for key, value in row.items()})
    return data


def test_the_draft_page_turns_an_edit_into_a_draft_and_publishes_nothing(client, staff_admin):
    client.force_login(staff_admin)
    url = reverse("admin:scoring_ruleset_draft", args=[seeded().pk])
    page = client.get(url)
    assert page.status_code == 200
    # the help text says how far back the negation guard looks, as the engine does
    assert f"among the {NEGATION_WINDOW} words before the match" in page.content.decode()
    data = publish_form_data(
        seeded(),
        "tighten GR-004",
        **{"GR-004": {"pattern": r"\bassured\s+income\b"}, "RF-003": {"DELETE": "on"}},
    )
    n = int(data["rules-TOTAL_FORMS"]) - 1
    data.update(
        {
            f"rules-{n}-code": "PF-900",
            f"rules-{n}-claim_type": "performance_forecast",
            f"rules-{n}-pattern": r"\bto\s+the\s+moon\b",
            f"rules-{n}-context_terms": "token*, coin*",
            f"rules-{n}-context_window": "6",
            f"rules-{n}-negation_guard": "on",
            f"rules-{n}-enabled": "on",
        }
    )
    response = client.post(url, data)
    draft = RuleSetDraft.objects.get()
    assert response.status_code == 302, response.content.decode()[:2000]
    assert response["Location"] == reverse("monitoring:rule_draft", args=[draft.pk])
    # nothing is published: the draft waits for its backtest
    assert RuleSet.objects.get(is_active=True) == seeded() and RuleSet.objects.count() == SEEDED
    rules = {rule.code: rule for rule in draft_rules(draft)}
    assert (draft.base, draft.note) == (seeded(), "tighten GR-004")
    assert rules["GR-004"].pattern == r"\bassured\s+income\b"
    assert "RF-003" not in rules
    assert rules["PF-900"].context_terms == ("token*", "coin*")
    unchanged = {d.code: d for d in snapshot(seeded())}
    assert rules["GR-001"] == unchanged["GR-001"]


def test_the_draft_page_shows_a_bad_pattern_and_saves_nothing(client, staff_admin):
    client.force_login(staff_admin)
    url = reverse("admin:scoring_ruleset_draft", args=[seeded().pk])
    response = client.post(url, publish_form_data(seeded(), "typo", **{"GR-001": {"pattern": "guarant(eed"}}))
    assert response.status_code == 200
    assert "invalid pattern" in response.content.decode()
    assert RuleSet.objects.count() == SEEDED and not RuleSetDraft.objects.exists()


def test_the_roll_back_action_asks_why_then_publishes_a_copy_shown_with_its_reason(client, staff_admin):
    publish_edit(base=seeded(), user=staff_admin, note="drop RE-003", remove=["RE-003"])
    client.force_login(staff_admin)
    changelist = reverse("admin:scoring_ruleset_changelist")
    chosen = {"action": "roll_back", "_selected_action": [str(seeded().pk)]}
    # the action first asks for the reason and publishes nothing
    asked = client.post(changelist, chosen)
    assert asked.status_code == 200 and 'name="reason"' in asked.content.decode()
    assert RuleSet.objects.get(is_active=True).version == SEEDED + 1
    # a blank reason is refused on the same page
    expected = {"apply": "1", "expected_active_version": str(SEEDED + 1)}
    blank = client.post(changelist, {**chosen, **expected, "reason": " "})
    assert blank.status_code == 200 and RuleSet.objects.get(is_active=True).version == SEEDED + 1
    # with a reason, the copy is published and its page says what it restores and why
    response = client.post(changelist, {**chosen, **expected, "reason": "RE-003 is needed"})
    assert response.status_code == 302
    active = RuleSet.objects.get(is_active=True)
    assert (active.version, active.restores, active.note) == (SEEDED + 2, seeded(), "RE-003 is needed")
    assert snapshot(active) == snapshot(seeded())
    page = client.get(reverse("admin:scoring_ruleset_change", args=[active.pk])).content.decode()
    restored = reverse("admin:scoring_ruleset_change", args=[seeded().pk])
    assert f'roll back to <a href="{restored}">v{SEEDED}</a>' in page
    assert "reason: RE-003 is needed" in page


def test_the_rule_benchmark_prints_one_json_object_with_its_figures():
    out = io.StringIO()
    call_command("bench_rules", "--n", "3", "--lengths", "300,2000", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["rules"] == Rule.objects.filter(rule_set__is_active=True, enabled=True).count()
    assert set(report) == {"rules", "rule_set_versions", "chars_300", "chars_2000"}
    assert report["chars_2000"]["msgs_per_s"] > 0 and report["chars_2000"]["hits_per_msg"] >= 0
