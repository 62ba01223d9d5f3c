"""Forms of the scoring app: the admin's "publish as new version" rule editor."""

from __future__ import annotations

import dataclasses
from typing import Any

from django import forms

from scoring.models import ClaimType
from scoring.rules import RuleError, RuleSpec, compile_rule
from scoring.services.rule_sets import MAX_CONTEXT_WINDOW, RuleDraft


class RuleForm(forms.Form):
    """One rule of the version being published. `original_code` ties a row to the base rule it
    edits; a row without it is a new rule."""

    original_code = forms.CharField(required=False, widget=forms.HiddenInput)
    code = forms.SlugField(max_length=64)
    claim_type = forms.ModelChoiceField(queryset=ClaimType.objects.all(), to_field_name="code")
    pattern = forms.CharField(max_length=500, widget=forms.TextInput(attrs={"size": 60}))
    context_terms = forms.CharField(
        required=False,
        help_text="Comma-separated; a trailing * is a prefix (invest*). Empty: no context needed.",
        widget=forms.TextInput(attrs={"size": 30}),
    )
    context_window = forms.IntegerField(min_value=1, max_value=MAX_CONTEXT_WINDOW, initial=8)
    negation_guard = forms.BooleanField(required=False, initial=True)
    enabled = forms.BooleanField(required=False, initial=True)
    description = forms.CharField(required=False, max_length=300)

    def clean_context_terms(self) -> tuple[str, ...]:
        raw = self.cleaned_data.get("context_terms") or ""
        return tuple(term.strip() for term in raw.split(",") if term.strip())

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        spec = RuleSpec(
            rule_id=0,
            code=data["code"],
            rule_set_version=0,
            claim_type=data["claim_type"].code,
            pattern=data["pattern"],
            context_terms=data["context_terms"],
            context_window=data["context_window"],
            negation_guard=data["negation_guard"],
        )
        try:
            compile_rule(spec)
        except RuleError as exc:
            self.add_error("pattern", str(exc).replace(" (id 0, rule set v0)", ""))
        return data

    def draft(self) -> RuleDraft:
        data = self.cleaned_data
        return RuleDraft(
            code=data["code"],
            claim_type=data["claim_type"].code,
            pattern=data["pattern"],
            context_terms=data["context_terms"],
            context_window=data["context_window"],
            negation_guard=data["negation_guard"],
            enabled=data["enabled"],
            description=data["description"],
        )


def initial_for(draft: RuleDraft) -> dict[str, Any]:
    """Form initial data for an existing rule."""
    return {
        "original_code": draft.code,
        "code": draft.code,
        "claim_type": draft.claim_type,
        "pattern": draft.pattern,
        "context_terms": ", ".join(draft.context_terms),
        "context_window": draft.context_window,
        "negation_guard": draft.negation_guard,
        "enabled": draft.enabled,
        "description": draft.description,
    }


class BaseRuleFormSet(forms.BaseFormSet):
    def clean(self) -> None:
        if any(self.errors):
            return
        seen: set[str] = set()
        for form in self.forms:
            if not form.has_changed() and not form.cleaned_data.get("original_code"):
                continue
            if self.can_delete and self._should_delete_form(form):
                continue
            code = form.cleaned_data.get("code")
            if code in seen:
                raise forms.ValidationError(f"Rule code {code} appears twice.")
            seen.add(code)

    def changes(self) -> tuple[list[RuleDraft], dict[str, dict[str, Any]], list[str]]:
        """(add, change, remove) relative to the base version, for rule_set_draft_create."""
        add: list[RuleDraft] = []
        change: dict[str, dict[str, Any]] = {}
        remove: list[str] = []
        for form in self.forms:
            original = form.cleaned_data.get("original_code")
            if original:
                if self._should_delete_form(form):
                    remove.append(original)
                elif form.has_changed():
                    change[original] = dataclasses.asdict(form.draft())
            elif form.has_changed() and not self._should_delete_form(form):
                add.append(form.draft())
        return add, change, remove


RuleFormSet = forms.formset_factory(RuleForm, formset=BaseRuleFormSet, extra=2, can_delete=True)


class PublishForm(forms.Form):
    note = forms.CharField(
        max_length=300,
        help_text="Why this version: it is recorded with the version.",
        widget=forms.TextInput(attrs={"size": 80}),
    )
    expected_active_version = forms.IntegerField(required=False, widget=forms.HiddenInput)


class RollBackForm(forms.Form):
    """The reason for a roll back (recorded as the new version's note) and the version it was
    asked against, so that two admins acting at once cannot overwrite each other silently."""

    reason = forms.CharField(
        max_length=300,
        help_text="Why roll back: it is recorded with the new version and shown on its page.",
        widget=forms.TextInput(attrs={"size": 80}),
    )
    expected_active_version = forms.IntegerField(required=False, widget=forms.HiddenInput)
