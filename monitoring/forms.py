"""The monitoring page's filter: period and model version."""

from __future__ import annotations

from django import forms

from monitoring.timeline import DAY, WEEK
from scoring.models import ModelVersion


class MonitoringFilterForm(forms.Form):
    period = forms.ChoiceField(choices=((DAY, "Day"), (WEEK, "Week")), required=False)
    model_version = forms.ModelChoiceField(
        queryset=ModelVersion.objects.order_by("-created_at", "-id"),
        required=False,
        empty_label="Active version",
        label="Model version",
    )

    def clean_period(self) -> str:
        return self.cleaned_data.get("period") or DAY


class RetryForm(forms.Form):
    """Why a failed message is sent back to scoring (kept in its audit record)."""

    reason = forms.CharField(max_length=2000, strip=True, widget=forms.Textarea(attrs={"rows": 2}))
