"""Pages of the explanations app."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from core.access import role_required
from core.roles import Role
from explanations.attention import ROLLOUT_NORMALISATION
from explanations.attention_demo import worked_example
from explanations.evaluation import REPORT_METHODS
from explanations.faithfulness import PASS_RULE
from explanations.selectors import latest_canary_check, latest_report, versions_with_reports
from scoring.models import ModelVersion

METHOD_LABELS = {
    "integrated_gradients": "Integrated Gradients",
    "occlusion": "Occlusion (word deletion)",
    "attention_last_layer_mean": "Attention, last layer, mean of heads",
    "attention_best_head": "Attention, best single head",
    "random": "Random words",
}
METRIC_LABELS = {
    "flip_rate": "Decision flip rate",
    "pass_rate": "Check pass rate",
    "comprehensiveness": "Comprehensiveness",
    "comprehensiveness_log_odds": "Comprehensiveness (log-odds)",
    "random_baseline_log_odds": "Random-words baseline (log-odds)",
    "sufficiency": "Sufficiency",
    "aopc": "AOPC",
    "random_baseline": "Random-words baseline",
    "beaten_by_random": "Random draws that beat it (share)",
    "token_f1": "Token-F1 vs rationale",
}
METRICS = tuple(METRIC_LABELS)


@login_required
@require_GET
def how_attention_works(request: HttpRequest) -> HttpResponse:
    """A small attention computation worked live by explanations.attention (any signed-in role)."""
    example = worked_example()

    def rows(matrix):
        return list(zip(example.tokens, matrix.tolist(), strict=True))

    context = {
        "ex": example,
        "qkv_rows": list(
            zip(example.tokens, example.q.tolist(), example.k.tolist(), example.v.tolist(), strict=True)
        ),
        "dot_rows": rows(example.dot),
        "scaled_rows": rows(example.scaled),
        "weight_rows": list(
            zip(example.tokens, example.weights.tolist(), example.weights.sum(axis=-1).tolist(), strict=True)
        ),
        "output_rows": rows(example.output),
        "masked_rows": list(
            zip(
                example.tokens,
                example.masked_weights.tolist(),
                example.masked_weights.sum(axis=-1).tolist(),
                strict=True,
            )
        ),
        "masked_output_rows": rows(example.masked_output),
        "focus_token": example.tokens[example.focus_row],
        "focus_before": example.weights[example.focus_row].tolist(),
        "focus_after": example.masked_weights[example.focus_row].tolist(),
        "focus_renormalised": example.focus_renormalised.tolist(),
        "masked_tokens": [t for t, keep in zip(example.tokens, example.key_mask, strict=True) if not keep],
        "chart_data": example.chart_data(),
        "rollout_normalisation": ROLLOUT_NORMALISATION,
    }
    return render(request, "explanations/how_attention_works.html", context)


def _report_rows(results: dict) -> list[dict]:
    methods = results.get("methods", {})
    return [
        {
            "method": m,
            "label": METHOD_LABELS.get(m, m),
            "figures": [methods[m].get(k) for k in METRICS],
            **methods[m],
        }
        for m in REPORT_METHODS
        if m in methods
    ]


def _chart_data(report, canary) -> dict:
    data: dict = {"methods": [], "labels": [], "metrics": {}, "aopc": [], "canary": None}
    if report is not None:
        rows = _report_rows(report.results)
        data["methods"] = [r["method"] for r in rows]
        data["labels"] = [r["label"] for r in rows]
        data["metrics"] = {k: [r.get(k) for r in rows] for k in METRICS}
        data["aopc"] = [
            {
                "label": r["label"],
                "x": [100 * p["fraction"] for p in r["aopc_curve"]],
                "y": [p["comprehensiveness"] for p in r["aopc_curve"]],
            }
            for r in rows
        ]
    if canary is not None and canary.pass_rates:
        names = sorted(canary.pass_rates)
        data["canary"] = {
            "labels": [METHOD_LABELS.get(m, m) for m in names],
            "pass_rates": [canary.pass_rates[m] for m in names],
        }
    return data


@role_required(Role.COMPLIANCE_ADMIN)
@require_GET
def faithfulness(request: HttpRequest) -> HttpResponse:
    """The latest faithfulness report and canary check of a model version (compliance admins)."""
    versions = list(versions_with_reports())
    name = request.GET.get("version")
    if name:
        version = get_object_or_404(ModelVersion, name=name)
    else:
        active = ModelVersion.objects.filter(is_active=True).first()
        version = active if active in versions else (versions[0] if versions else active)
    report = latest_report(version) if version else None
    canary = latest_canary_check(version) if version else None
    context = {
        "versions": versions,
        "version": version,
        "report": report,
        "rows": _report_rows(report.results) if report else [],
        "metric_labels": list(METRIC_LABELS.values()),
        "canary": canary,
        "canary_rates": sorted((METHOD_LABELS.get(m, m), r) for m, r in (canary.pass_rates or {}).items())
        if canary
        else [],
        "pass_rule": PASS_RULE,
        "chart_data": _chart_data(report, canary),
    }
    return render(request, "explanations/faithfulness.html", context)
