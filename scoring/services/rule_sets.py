"""Rule-set versions: an edit is a draft, backtested, then published as a new active version.

A published rule set is never changed in place. Editing means: take a base version, apply the
changes and save the result as a draft (`rule_set_draft_create`); the draft is backtested against
the active rules (monitoring.backtest) and published on a finished backtest as version max+1,
activated atomically (`rule_set_draft_publish`). No edit is published blind: there is no one-step
publish of an edit. The one exception is rolling back (`rule_set_roll_back`): an earlier
published version is published again unchanged, at once, with the reason recorded; its rules
have run before, so there is nothing new to backtest. Rule matches recorded earlier keep
pointing at the rules (and version) that produced them, so an old match stays explainable.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max

from core.roles import Role, has_role
from scoring.errors import RuleSetError
from scoring.models import ClaimType, Rule, RuleSet, RuleSetBacktest, RuleSetDraft
from scoring.rules import RuleError, RuleSpec, compile_rule, nested_repeat

_CODE = re.compile(r"^[-a-zA-Z0-9_]+$")
MAX_PATTERN_CHARS = Rule._meta.get_field("pattern").max_length
MAX_CODE_CHARS = Rule._meta.get_field("code").max_length
MAX_NOTE_CHARS = RuleSet._meta.get_field("note").max_length
MAX_DESCRIPTION_CHARS = Rule._meta.get_field("description").max_length
MAX_CONTEXT_WINDOW = 100


@dataclass(frozen=True)
class RuleDraft:
    """The editable content of one rule, identified within a set by its stable `code`."""

    code: str
    claim_type: str
    pattern: str
    context_terms: tuple[str, ...] = ()
    context_window: int = 8
    negation_guard: bool = True
    enabled: bool = True
    description: str = ""


RULE_FIELDS = frozenset(f.name for f in dataclasses.fields(RuleDraft))


def rule_draft_of(rule: Rule) -> RuleDraft:
    """The draft that reproduces a saved rule."""
    return RuleDraft(
        code=rule.code,
        claim_type=rule.claim_type.code,
        pattern=rule.pattern,
        context_terms=tuple(rule.context_terms or ()),
        context_window=rule.context_window,
        negation_guard=rule.negation_guard,
        enabled=rule.enabled,
        description=rule.description,
    )


def _normalise(draft: RuleDraft) -> RuleDraft:
    terms = draft.context_terms
    if isinstance(terms, str) or not isinstance(terms, Iterable):
        raise RuleSetError(f"Rule {draft.code}: context terms must be a list of words, not {terms!r}.")
    return dataclasses.replace(draft, context_terms=tuple(terms))


def _validate(draft: RuleDraft, claim_codes: set[str]) -> None:
    code = draft.code
    if not isinstance(code, str) or not _CODE.match(code) or len(code) > MAX_CODE_CHARS:
        raise RuleSetError(
            f"Rule code {code!r} is not valid: use up to {MAX_CODE_CHARS} letters, digits, - or _."
        )
    if draft.claim_type not in claim_codes:
        raise RuleSetError(
            f"Rule {code}: unknown claim type {draft.claim_type!r} (known: {', '.join(sorted(claim_codes))})."
        )
    if not isinstance(draft.pattern, str) or len(draft.pattern) > MAX_PATTERN_CHARS:
        raise RuleSetError(
            f"Rule {code}: the pattern must be text of at most {MAX_PATTERN_CHARS} characters."
        )
    window = draft.context_window
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= MAX_CONTEXT_WINDOW:
        raise RuleSetError(
            f"Rule {code}: the context window must be a whole number from 1 to {MAX_CONTEXT_WINDOW}."
        )
    if not all(isinstance(term, str) for term in draft.context_terms):
        raise RuleSetError(f"Rule {code}: every context term must be text.")
    if not isinstance(draft.negation_guard, bool) or not isinstance(draft.enabled, bool):
        raise RuleSetError(f"Rule {code}: negation_guard and enabled must be true or false.")
    if not isinstance(draft.description, str) or len(draft.description) > MAX_DESCRIPTION_CHARS:
        raise RuleSetError(
            f"Rule {code}: the description must be at most {MAX_DESCRIPTION_CHARS} characters."
        )
    spec = RuleSpec(
        rule_id=0,
        code=code,
        rule_set_version=0,
        claim_type=draft.claim_type,
        pattern=draft.pattern,
        context_terms=draft.context_terms,
        context_window=window,
        negation_guard=draft.negation_guard,
    )
    try:
        compile_rule(spec)
    except RuleError as exc:
        raise RuleSetError(str(exc).replace(" (id 0, rule set v0)", "")) from exc
    risk = nested_repeat(draft.pattern)
    if risk is not None:
        raise RuleSetError(f"Rule {code}: pattern {draft.pattern!r} is refused: {risk}.")


def _apply_changes(
    base: list[RuleDraft],
    add: Sequence[RuleDraft],
    change: Mapping[str, Mapping[str, Any]],
    remove: Iterable[str],
) -> list[RuleDraft]:
    drafts = {draft.code: draft for draft in base}
    for code in remove:
        if code not in drafts:
            raise RuleSetError(f"Cannot remove rule {code!r}: the base version has no such rule.")
        del drafts[code]
    for code, fields in change.items():
        if code not in drafts:
            raise RuleSetError(
                f"Cannot change rule {code!r}: the base version has no such rule (or it is removed)."
            )
        unknown = set(fields) - RULE_FIELDS
        if unknown:
            raise RuleSetError(f"Rule {code}: unknown field(s) {', '.join(sorted(unknown))}.")
        updated = _normalise(dataclasses.replace(drafts[code], **fields))
        del drafts[code]
        if updated.code in drafts:
            raise RuleSetError(f"Cannot rename rule {code} to {updated.code}: that code is taken.")
        drafts[updated.code] = updated
    for draft in add:
        if not isinstance(draft, RuleDraft):
            raise RuleSetError(f"A new rule must be a RuleDraft, not {type(draft).__name__}.")
        if draft.code in drafts:
            raise RuleSetError(f"Cannot add rule {draft.code}: that code already exists in this version.")
        drafts[draft.code] = _normalise(draft)
    return sorted(drafts.values(), key=lambda d: d.code)


def rule_set_roll_back(
    *,
    to: RuleSet,
    user: AbstractBaseUser,
    reason: str,
    expected_active_version: int | None = None,
) -> RuleSet:
    """Publish the earlier version `to` again, unchanged, as the new active version, at once.

    The new version records the version it restores (RuleSet.restores) and `reason` as its note.
    Promises: only compliance admins (and superusers) roll back; a reason is required; `to` must
    be a published version other than the active one; with `expected_active_version`, refused
    when another version became active meanwhile; on any error a RuleSetError says what is wrong
    and nothing is written; exactly one set is active afterwards; no existing rule or rule set is
    modified except the old active set's is_active flag."""
    reason = _check_publisher(user, reason, verb="roll back")
    if to.pk is None:
        raise RuleSetError("Roll back to a saved rule-set version.")
    if to.is_active:
        raise RuleSetError(f"v{to.version} is the active version already: there is nothing to roll back.")
    rules = [rule_draft_of(rule) for rule in to.rules.select_related("claim_type").order_by("code")]
    return _publish(
        drafts=rules,
        base=to,
        base_drafts=rules,
        user=user,
        note=reason,
        expected_active_version=expected_active_version,
        restores=to,
    )


def _check_publisher(user: AbstractBaseUser, note: str, *, verb: str) -> str:
    if not has_role(user, Role.COMPLIANCE_ADMIN):
        raise RuleSetError(f"Only a compliance admin can {verb} rule sets.")
    note = (note or "").strip()
    if not note:
        raise RuleSetError("Say why in the note: every rule-set version records its reason.")
    if len(note) > MAX_NOTE_CHARS:
        raise RuleSetError(f"The note must be at most {MAX_NOTE_CHARS} characters.")
    return note


def _edited(
    base: RuleSet,
    *,
    add: Sequence[RuleDraft] = (),
    change: Mapping[str, Mapping[str, Any]] | None = None,
    remove: Iterable[str] = (),
) -> tuple[list[RuleDraft], list[RuleDraft]]:
    """(the base's rules, the rules after the changes), every one validated."""
    if base.pk is None:
        raise RuleSetError("The base rule set must be a saved version.")
    base_drafts = [rule_draft_of(rule) for rule in base.rules.select_related("claim_type").order_by("code")]
    drafts = _apply_changes(base_drafts, add, change or {}, remove)
    claim_codes = set(ClaimType.objects.values_list("code", flat=True))
    for draft in drafts:
        _validate(draft, claim_codes)
    return base_drafts, drafts


def _publish(
    *,
    drafts: list[RuleDraft],
    base: RuleSet,
    base_drafts: list[RuleDraft],
    user: AbstractBaseUser,
    note: str,
    expected_active_version: int | None,
    backtest: RuleSetBacktest | None = None,
    restores: RuleSet | None = None,
    on_published: Any = None,
) -> RuleSet:
    """Save `drafts` as the next version and activate it (see the promises of
    rule_set_draft_publish and rule_set_roll_back)."""
    try:
        with transaction.atomic():
            active = RuleSet.objects.select_for_update().filter(is_active=True).first()
            if expected_active_version is not None and (
                active is None or active.version != expected_active_version
            ):
                now = f"v{active.version}" if active else "none"
                raise RuleSetError(
                    f"Rule set v{expected_active_version} is no longer the active version ({now} is): "
                    "reload and edit the active version."
                )
            if active is not None and active.pk == base.pk and drafts == base_drafts:
                raise RuleSetError(f"Nothing to publish: the changes leave v{base.version} as it is.")
            version = (RuleSet.objects.aggregate(top=Max("version"))["top"] or 0) + 1
            if active is not None:
                RuleSet.objects.filter(pk=active.pk).update(is_active=False)
            if backtest is not None and (active is None or backtest.active_id != active.pk):
                now = f"v{active.version}" if active else "no version"
                raise RuleSetError(
                    f"The backtest compared the draft with v{backtest.active.version}, but {now} is active "
                    "now: run the backtest again before publishing."
                )
            published = RuleSet.objects.create(
                version=version,
                is_active=True,
                note=note,
                created_by=user if user.pk else None,
                backtest=backtest,
                restores=restores,
            )
            types = {ct.code: ct for ct in ClaimType.objects.filter(code__in={d.claim_type for d in drafts})}
            Rule.objects.bulk_create(
                Rule(
                    rule_set=published,
                    code=d.code,
                    claim_type=types[d.claim_type],
                    pattern=d.pattern,
                    context_terms=list(d.context_terms),
                    context_window=d.context_window,
                    negation_guard=d.negation_guard,
                    enabled=d.enabled,
                    description=d.description,
                )
                for d in drafts
            )
            if on_published is not None:
                on_published(published)
    except IntegrityError as exc:
        # Two publishes raced past the lock (possible when no set was active): the loser retries.
        raise RuleSetError("Another rule-set version was published at the same time; try again.") from exc
    return published


# --- Drafts: edit, backtest (monitoring.backtest), then publish -------------------------------------


def draft_rules(draft: RuleSetDraft) -> list[RuleDraft]:
    """The rules of a draft, as RuleDrafts."""
    return [_normalise(RuleDraft(**fields)) for fields in draft.rules]


def draft_changes(draft: RuleSetDraft) -> dict[str, list]:
    """What a draft changes in its base: added and removed rules, and (before, after) pairs."""
    before = {rule.code: rule_draft_of(rule) for rule in draft.base.rules.select_related("claim_type")}
    after = {rule.code: rule for rule in draft_rules(draft)}
    return {
        "added": [after[code] for code in sorted(after.keys() - before.keys())],
        "removed": [before[code] for code in sorted(before.keys() - after.keys())],
        "changed": [
            (before[code], after[code])
            for code in sorted(before.keys() & after.keys())
            if before[code] != after[code]
        ],
    }


def rule_set_draft_create(
    *,
    base: RuleSet,
    user: AbstractBaseUser,
    note: str,
    add: Sequence[RuleDraft] = (),
    change: Mapping[str, Mapping[str, Any]] | None = None,
    remove: Iterable[str] = (),
) -> RuleSetDraft:
    """Save an edit of `base` as a draft, the first of publishing's two steps: nothing routes
    differently until the draft is backtested and published (`rule_set_draft_publish`).

    Promises: only compliance admins draft; every rule compiles; an edit that changes nothing
    is refused; on any error a RuleSetError says what is wrong and nothing is written."""
    note = _check_publisher(user, note, verb="draft")
    base_drafts, drafts = _edited(base, add=add, change=change, remove=remove)
    if drafts == base_drafts:
        raise RuleSetError(f"Nothing to draft: the changes leave v{base.version} as it is.")
    return RuleSetDraft.objects.create(
        base=base,
        rules=[dataclasses.asdict(d) | {"context_terms": list(d.context_terms)} for d in drafts],
        note=note,
        created_by=user if user.pk else None,
    )


def rule_set_draft_publish(
    *, draft: RuleSetDraft, backtest: RuleSetBacktest, user: AbstractBaseUser, note: str = ""
) -> RuleSet:
    """Publish a backtested draft as the new active version, the second step.

    Promises: only compliance admins publish; the backtest must be this draft's, finished, and
    made against the version that is still active (otherwise its figures describe another
    change and the publish is refused); a draft is published once; the new version records the
    backtest it was based on (RuleSet.backtest) and the draft points at it; on any error a
    RuleSetError says what is wrong and nothing is written."""
    note = _check_publisher(user, note or draft.note, verb="publish")
    if backtest.draft_id != draft.pk:
        raise RuleSetError(f"Backtest #{backtest.pk} is not a backtest of draft #{draft.pk}.")
    if backtest.status != RuleSetBacktest.Status.DONE:
        raise RuleSetError(
            f"Backtest #{backtest.pk} is {backtest.get_status_display().lower()}: "
            "publish on a finished backtest."
        )
    if draft.published_id is not None:
        raise RuleSetError(f"Draft #{draft.pk} is already published (v{draft.published.version}).")
    claim_codes = set(ClaimType.objects.values_list("code", flat=True))
    drafts = draft_rules(draft)
    for rule in drafts:
        _validate(rule, claim_codes)

    def link(published: RuleSet) -> None:
        updated = RuleSetDraft.objects.filter(pk=draft.pk, published__isnull=True).update(published=published)
        if not updated:
            raise RuleSetError(f"Draft #{draft.pk} was published meanwhile.")

    base_rules = draft.base.rules.select_related("claim_type").order_by("code")
    return _publish(
        drafts=sorted(drafts, key=lambda d: d.code),
        base=draft.base,
        base_drafts=[rule_draft_of(rule) for rule in base_rules],
        user=user,
        note=note,
        expected_active_version=None,
        backtest=backtest,
        on_published=link,
    )
