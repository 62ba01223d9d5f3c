"""Forms of the Models page."""

from __future__ import annotations

from django import forms

from governance.selectors import model_versions


class ActivateForm(forms.Form):
    version = forms.ModelChoiceField(model_versions(), to_field_name="name")
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Required: recorded with the activation.",
    )


class CompareForm(forms.Form):
    baseline = forms.ModelChoiceField(model_versions(), to_field_name="name", label="Reference (A)")
    candidate = forms.ModelChoiceField(model_versions(), to_field_name="name", label="Challenger (B)")


class ThresholdForm(forms.Form):
    version = forms.ModelChoiceField(model_versions(), to_field_name="name")
    threshold = forms.FloatField(min_value=0.0, max_value=1.0)
    reason = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
