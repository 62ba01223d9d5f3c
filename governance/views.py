"""Model governance for compliance admins (auditors read): versions, activation with a reason,
rollback, shadow challengers, threshold variants, and comparisons."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.access import role_required
from core.roles import Role
from governance import selectors
from governance.forms import ActivateForm, CompareForm, ThresholdForm
from governance.services.comparisons import model_comparison_request
from governance.services.model_versions import model_version_activate, model_version_with_threshold
from governance.services.shadow import model_version_set_shadow
from scoring.constants import ROUTING_RULES_ACTIVE, ROUTING_RULES_NONE
from scoring.errors import ScoringError

READ = (Role.COMPLIANCE_ADMIN, Role.AUDITOR)
WRITE = (Role.COMPLIANCE_ADMIN,)


@role_required(*READ, write_roles=WRITE)
@require_GET
def models_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "governance/models.html",
        {
            "versions": selectors.model_versions_listed(),
            "activations": selectors.recent_activations(50),
            "comparisons": selectors.recent_comparisons(20),
            "activate_form": ActivateForm(),
            "compare_form": CompareForm(),
            "threshold_form": ThresholdForm(),
        },
    )


def _invalid(request: HttpRequest, form: forms.Form) -> HttpResponse:
    for field, errors in form.errors.items():
        messages.error(request, f"{field}: {' '.join(errors)}")
    return redirect("reviews:models")


@role_required(*WRITE)
@require_POST
def models_activate(request: HttpRequest) -> HttpResponse:
    form = ActivateForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    try:
        activation = model_version_activate(
            version=form.cleaned_data["version"], user=request.user, reason=form.cleaned_data["reason"]
        )
    except ScoringError as exc:
        messages.error(request, str(exc))
    else:
        previous = activation.previous.name if activation.previous else "none"
        messages.success(request, f"{activation.model_version.name} is now active (previously {previous}).")
    return redirect("reviews:models")


@role_required(*WRITE)
@require_POST
def models_shadow(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(selectors.model_versions(), pk=pk)
    enabled = request.POST.get("enabled") == "1"
    try:
        model_version_set_shadow(version=version, enabled=enabled)
    except ScoringError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"{version.name} {'now scores new traffic in shadow' if enabled else 'left shadow'}."
        )
    return redirect("reviews:models")


@role_required(*WRITE)
@require_POST
def models_threshold(request: HttpRequest) -> HttpResponse:
    form = ThresholdForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    try:
        variant = model_version_with_threshold(
            version=form.cleaned_data["version"],
            threshold=form.cleaned_data["threshold"],
            reason=form.cleaned_data["reason"],
        )
    except ScoringError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"New version {variant.name} shares the artifact; activate it to use it.")
    return redirect("reviews:models")


@role_required(*WRITE)
@require_POST
def models_compare(request: HttpRequest) -> HttpResponse:
    form = CompareForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    try:
        comparison = model_comparison_request(
            baseline=form.cleaned_data["baseline"],
            candidate=form.cleaned_data["candidate"],
            user=request.user,
        )
    except ScoringError as exc:
        messages.error(request, str(exc))
        return redirect("reviews:models")
    return redirect("reviews:comparison", pk=comparison.pk)


SET_TITLES = {
    "test_in_distribution": "Corpus test split (in distribution)",
    "novel_phrasing": "Novel phrasings (test-only templates)",
    "drift_phrasings": "Drift phrasings (never in the corpus)",
    "reviewed_traffic": "Reviewed traffic (reviewers are the reference)",
}


def comparison_tables(results: dict) -> list[dict]:
    """Shape the stored results for the template (which cannot index by a variable key)."""
    if not results:
        return []
    names = [results["baseline"]["name"], results["candidate"]["name"]]
    tables = []
    for label, by_version in results["sets"].items():
        rows = []
        for role, name in zip(("reference", "challenger"), names, strict=True):
            summary = by_version[name]
            overall = summary.get("overall", {})
            rows.append(
                {
                    "role": role,
                    "name": name,
                    "n": overall.get("n", 0),
                    "precision": overall.get("precision"),
                    "recall": overall.get("recall"),
                    "per_type": [
                        {"code": code, "recall": stats["recall"], "precision": stats["precision"]}
                        for code, stats in summary.get("per_claim_type", {}).items()
                    ],
                }
            )
        disagreements = [
            {
                **item,
                "reference": item[names[0]],
                "challenger": item[names[1]],
                "right_role": "challenger" if item["right"] == names[1] else "reference",
            }
            for item in results["disagreements"].get(label, [])
        ]
        tables.append(
            {
                "label": label,
                "title": SET_TITLES.get(label, label),
                "rows": rows,
                "disagreement_count": results["disagreement_counts"].get(label, 0),
                "disagreements": disagreements,
            }
        )
    return tables


def canary_rows(results: dict) -> list[dict]:
    """The canary check of both versions as table rows: (role, name, pass rate per method)."""
    canary = (results or {}).get("canary") or {}
    if not canary.get("pass_rates"):
        return []
    names = [results["baseline"]["name"], results["candidate"]["name"]]
    return [
        {"role": role, "name": name, "pass_rates": canary["pass_rates"].get(name, {})}
        for role, name in zip(("reference", "challenger"), names, strict=True)
    ]


@role_required(*READ, write_roles=WRITE)
@require_GET
def comparison_detail(request: HttpRequest, pk: int) -> HttpResponse:
    comparison = get_object_or_404(selectors.comparisons_with_versions(), pk=pk)
    template = "governance/_comparison_body.html" if request.htmx else "governance/comparison.html"
    context = {
        "comparison": comparison,
        "tables": comparison_tables(comparison.results),
        "canary_rows": canary_rows(comparison.results),
        "results": comparison.results,
        "queue": settings.CHECKS_QUEUE,
    }
    return render(request, template, context)


def evaluation_tables(metrics: dict) -> list[dict]:
    """The hand-written sets of a version's metrics, shaped for the template: per set the model
    flag and the routing decision overall, per claim type and per kind."""
    tables = []
    for name, report in (metrics.get("evaluation_sets") or {}).items():
        decisions = report.get("decisions", {})
        routed, flagged = decisions.get("routed", {}), decisions.get("flagged", {})
        kinds = sorted(set(routed.get("per_kind", {})) | set(flagged.get("per_kind", {})))
        tables.append(
            {
                "name": name,
                "routed": routed.get("overall", {}),
                "flagged": flagged.get("overall", {}),
                "per_type": [
                    {"code": code, **stats, "flagged": flagged.get("per_claim_type", {}).get(code, {})}
                    for code, stats in routed.get("per_claim_type", {}).items()
                ],
                "per_kind": [
                    {
                        "kind": kind,
                        "routed": routed.get("per_kind", {}).get(kind, {}),
                        "flagged": flagged.get("per_kind", {}).get(kind, {}),
                    }
                    for kind in kinds
                ],
                "ece": (report.get("calibration") or {}).get("ece"),
            }
        )
    return tables


def reliability_chart(metrics: dict) -> dict:
    """{series: [{name, x: mean score per bin, y: share of claims, n}]} for the reliability diagram."""
    calibration = metrics.get("calibration") or {}
    sources = [("val", calibration.get("val")), ("test", calibration.get("test"))]
    sources += [(name, r.get("calibration")) for name, r in (metrics.get("evaluation_sets") or {}).items()]
    series = []
    for name, table in sources:
        if not table or not table.get("bins"):
            continue
        bins = [b for b in table["bins"] if b["n"]]
        series.append(
            {
                "name": f"{name} (ECE {table['ece']:.3f})",
                "x": [b["mean_score"] for b in bins],
                "y": [b["claim_share"] for b in bins],
                "n": [b["n"] for b in bins],
            }
        )
    return {"series": series}


@role_required(*READ, write_roles=WRITE)
@require_GET
def model_detail(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(selectors.model_version_for_page(), pk=pk)
    metrics = version.metrics or {}
    context = {
        "version": version,
        "metrics": metrics,
        "calibration": metrics.get("calibration") or {},
        "evaluation": evaluation_tables(metrics),
        # metrics.json's "routing_rules": a training called without rules (train(), as tests and
        # scripts call it; the service passes the active set) measured its Routed rows by the flag alone.
        "measured_without_rules": metrics.get("routing_rules") == ROUTING_RULES_NONE,
        "measured_with_rules": metrics.get("routing_rules") == ROUTING_RULES_ACTIVE,
        "chart_data": reliability_chart(metrics),
        "slices": sorted((metrics.get("test_in_distribution") or {}).get("per_slice", {}).items()),
        "per_type": sorted((metrics.get("test_in_distribution") or {}).get("per_claim_type", {}).items()),
    }
    return render(request, "governance/model_detail.html", context)
