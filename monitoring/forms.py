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


class ReviewersFilterForm(forms.Form):
    """The Reviewers page's window (the last N days) and the period of its kappa chart."""

    days = forms.IntegerField(min_value=1, max_value=730, required=False, label="Last days")
    period = forms.ChoiceField(choices=((DAY, "Day"), (WEEK, "Week")), required=False, label="Chart period")

    def clean_days(self) -> int:
        return self.cleaned_data.get("days") or REVIEWERS_DEFAULT_DAYS

    def clean_period(self) -> str:
        return self.cleaned_data.get("period") or WEEK


REVIEWERS_DEFAULT_DAYS = 90


class BacktestForm(forms.Form):
    """A backtest's period: the last N days (default 30)."""

    days = forms.IntegerField(min_value=1, max_value=365, initial=30, label="Days of stored messages")


class DraftPublishForm(forms.Form):
    """Publish a draft on one of its finished backtests."""

    backtest = forms.IntegerField(
        widget=forms.HiddenInput,
        error_messages={
            "required": "The form does not say which backtest to publish on: reload the page.",
            "invalid": "The form does not say which backtest to publish on: reload the page.",
        },
    )
    note = forms.CharField(max_length=300, widget=forms.TextInput(attrs={"size": 80}), label="Note")
