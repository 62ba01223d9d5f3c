"""Forms of the reviews app: queue and record filters, decisions, second-level decisions and
corrections. Forms validate shape; the decision service enforces the rules of state."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db.models import Q

from core.roles import Role
from reviews.constants import (
    NOTE_MAX_LENGTH,
    REASON_MAX_LENGTH,
    RECORD_DATE_MAX,
    RECORD_DATE_MIN,
    SEARCH_MAX_LENGTH,
    Agreement,
    ReceivedWithin,
)
from reviews.models import ReviewDecision, Verdict
from reviews.selectors import QueueFilters, RecordFilters
from scoring.models import ClaimType, ModelVersion

YES_NO = (("", "Any"), ("yes", "Yes"), ("no", "No"))


class _ListChoiceIterator(forms.models.ModelChoiceIterator):
    """Fetch the choices with one plain query. The default iterator streams them with a
    server-side cursor, which on PostgreSQL costs three round trips per field per render."""

    def __iter__(self):
        if self.field.empty_label is not None:
            yield ("", self.field.empty_label)
        for obj in list(self.queryset):
            yield self.choice(obj)


class ListedModelChoiceField(forms.ModelChoiceField):
    iterator = _ListChoiceIterator


def _yes_no(value: str) -> bool | None:
    return {"yes": True, "no": False}.get(value)


class QueueFilterForm(forms.Form):
    claim_type = ListedModelChoiceField(
        ClaimType.objects.all(), to_field_name="code", required=False, label="Claim type"
    )
    rule_hit = forms.ChoiceField(choices=YES_NO, required=False, label="Rule hit")
    qa_sample = forms.ChoiceField(choices=YES_NO, required=False, label="QA sample")
    model_version = ListedModelChoiceField(ModelVersion.objects.all(), required=False, label="Model version")
    received = forms.ChoiceField(choices=(("", "Any time"), *ReceivedWithin.CHOICES), required=False)
    cursor = forms.CharField(required=False, max_length=500, widget=forms.HiddenInput)

    def filters(self) -> QueueFilters:
        data = self.cleaned_data
        return QueueFilters(
            claim_type=data.get("claim_type"),
            rule_hit=_yes_no(data.get("rule_hit", "")),
            qa_sample=_yes_no(data.get("qa_sample", "")),
            model_version=data.get("model_version"),
            received=data.get("received") or None,
        )


_DATE_RANGE_MESSAGE = f"Choose a day from {RECORD_DATE_MIN:%Y-%m-%d} to {RECORD_DATE_MAX:%Y-%m-%d}."
_RECORD_DATE_RANGE = [
    MinValueValidator(RECORD_DATE_MIN, message=_DATE_RANGE_MESSAGE),
    MaxValueValidator(RECORD_DATE_MAX, message=_DATE_RANGE_MESSAGE),
]


class RecordFilterForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=SEARCH_MAX_LENGTH,
        label="Search",
        help_text="An external id, or words in the message, the note or a reason.",
    )
    reviewer = ListedModelChoiceField(
        User.objects.filter(Q(groups__name__in=[Role.REVIEWER, Role.COMPLIANCE_ADMIN]) | Q(is_superuser=True))
        .distinct()
        .order_by("username"),
        to_field_name="username",
        required=False,
    )
    date_from = forms.DateField(
        required=False,
        label="From",
        widget=forms.DateInput(attrs={"type": "date", "min": RECORD_DATE_MIN, "max": RECORD_DATE_MAX}),
        validators=_RECORD_DATE_RANGE,
    )
    date_to = forms.DateField(
        required=False,
        label="To",
        widget=forms.DateInput(attrs={"type": "date", "min": RECORD_DATE_MIN, "max": RECORD_DATE_MAX}),
        validators=_RECORD_DATE_RANGE,
    )
    claim_type = ListedModelChoiceField(
        ClaimType.objects.all(), to_field_name="code", required=False, label="Claim type"
    )
    agreement = forms.ChoiceField(choices=(("", "Any"), *Agreement.CHOICES), required=False)
    model_version = ListedModelChoiceField(ModelVersion.objects.all(), required=False, label="Model version")
    verdict = forms.ChoiceField(choices=(("", "Any"), *Verdict.choices), required=False)
    cursor = forms.CharField(required=False, max_length=100, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and start > end:
            raise forms.ValidationError("The start date is after the end date.")
        return data

    def filters(self) -> RecordFilters:
        data = self.cleaned_data
        return RecordFilters(
            q=data.get("q", "").strip(),
            reviewer=data.get("reviewer"),
            date_from=data.get("date_from"),
            date_to=data.get("date_to"),
            claim_type=data.get("claim_type"),
            agreement=data.get("agreement") or None,
            model_version=data.get("model_version"),
            verdict=data.get("verdict") or None,
        )


class _DecisionFields(forms.Form):
    claim_type = ListedModelChoiceField(
        ClaimType.objects.order_by("position"),
        to_field_name="code",
        required=False,
        widget=forms.RadioSelect,
        empty_label=None,
        label="Claim type",
    )
    note = forms.CharField(
        required=False, max_length=NOTE_MAX_LENGTH, widget=forms.Textarea(attrs={"rows": 3}), label="Note"
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        verdict = data.get("verdict")
        if verdict == Verdict.CLAIM and not data.get("claim_type"):
            self.add_error("claim_type", "Choose the claim type of this claim.")
        if verdict and verdict != Verdict.CLAIM and data.get("claim_type"):
            self.add_error("claim_type", "A claim type is recorded only with a claim verdict.")
        if "escalation_reason" in self.errors:
            return data  # too long or not text: that error stands alone, not "say why" as well
        reason = data.get("escalation_reason", "")
        if verdict == Verdict.ESCALATE and not reason.strip():
            self.add_error("escalation_reason", "Say why this needs a compliance admin.")
        if verdict and verdict != Verdict.ESCALATE and reason.strip():
            self.add_error("escalation_reason", "A reason is recorded only with an escalation.")
        return data


class DecisionForm(_DecisionFields):
    """A reviewer's first-level decision."""

    verdict = forms.ChoiceField(choices=Verdict.choices, widget=forms.RadioSelect, label="Decision")
    escalation_reason = forms.CharField(
        required=False,
        max_length=REASON_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Escalation reason",
    )
    field_order = ["verdict", "claim_type", "note", "escalation_reason"]


FINAL_VERDICTS = [(Verdict.CLAIM, "Claim"), (Verdict.NO_CLAIM, "Not a claim")]


class SecondLevelForm(_DecisionFields):
    """A compliance admin's decision on an escalated message."""

    verdict = forms.ChoiceField(choices=FINAL_VERDICTS, widget=forms.RadioSelect, label="Decision")
    field_order = ["verdict", "claim_type", "note"]


class CorrectionForm(_DecisionFields):
    """A compliance admin's correction: a new decision that supersedes the latest one, with a
    reason. Like the second-level decision it decides (claim or not a claim): escalating would send
    a decided message back to the compliance admins who correct it (reviews.services refuses it)."""

    verdict = forms.ChoiceField(choices=FINAL_VERDICTS, widget=forms.RadioSelect, label="Decision")

    supersedes = forms.ModelChoiceField(
        ReviewDecision.objects.all(),
        widget=forms.HiddenInput,
        label="Decision corrected",
        error_messages={
            "required": "The form does not say which decision it corrects: reload the page and correct the "
            "latest decision.",
            "invalid_choice": "The decision this corrects does not exist: reload the page and correct the "
            "latest decision.",
        },
    )
    supersede_reason = forms.CharField(
        max_length=REASON_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Reason for the correction",
    )
    field_order = ["verdict", "claim_type", "note", "supersede_reason", "supersedes"]
