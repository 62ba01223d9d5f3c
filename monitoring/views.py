"""The compliance admin's monitoring page: plotly charts, each drawn by static/js/monitoring.js
from its JSON endpoint; the alerts are also listed by the server, so they read without JS."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from core.access import role_required
from core.roles import Role
from monitoring import selectors
from monitoring.agreement import KAPPA_INTERVAL, MIN_PAIRS
from monitoring.api_urls import ENDPOINTS
from monitoring.backtest import rule_backtest_request
from monitoring.forms import BacktestForm, DraftPublishForm, MonitoringFilterForm, ReviewersFilterForm
from monitoring.selectors.reviewers import reviewers_report
from monitoring.services import rollup_refresh
from monitoring.stats import ALERT_RULE, PSI_MAJOR, PSI_MODERATE, RECALL_ESTIMATOR
from monitoring.timeline import DAY
from scoring.errors import RuleSetError
from scoring.models import RuleSetBacktest, RuleSetDraft
from scoring.selectors import active_rule_set
from scoring.services.rule_sets import draft_changes, rule_set_draft_publish

ALERTS_SHOWN = 50


@role_required(Role.COMPLIANCE_ADMIN)
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    form = MonitoringFilterForm(request.GET or None)
    valid = form.is_valid() if request.GET else True
    period = form.cleaned_data["period"] if request.GET and valid else DAY
    chosen = form.cleaned_data.get("model_version") if request.GET and valid else None
    version = chosen or selectors.version_resolve(None)
    if valid:
        rollup_refresh()
    alerts = selectors.alerts(period=period) if valid else []
    context = {
        "form": form,
        "period": period,
        "version": version,
        "alerts": alerts[:ALERTS_SHOWN],
        "alerts_total": len(alerts),
        "alert_rule": ALERT_RULE,
        "recall_estimator": RECALL_ESTIMATOR,
        "reference_days": settings.MONITORING_REFERENCE_DAYS,
        "config": {
            "endpoints": {name: reverse(name) for name in ENDPOINTS},
            "period": period,
            "model_version": version.pk if version else None,
            "psi_moderate": PSI_MODERATE,
            "psi_major": PSI_MAJOR,
        },
    }
    return render(request, "monitoring/dashboard.html", context, status=200 if valid else 400)


@role_required(Role.COMPLIANCE_ADMIN)
@require_GET
def reviewers(request: HttpRequest) -> HttpResponse:
    """How consistently reviewers decide, from blind double reviews (monitoring.selectors.reviewers)."""
    form = ReviewersFilterForm(request.GET)
    # the page's introduction (the sampling rate) reads the same on a refused window
    context = {"form": form, "double_review_rate": f"{100 * settings.DOUBLE_REVIEW_RATE:g} %"}
    if not form.is_valid():
        return render(request, "monitoring/reviewers.html", context, status=400)
    report = reviewers_report(days=form.cleaned_data["days"], period=form.cleaned_data["period"])
    context |= {
        "report": report,
        "alert_rule": ALERT_RULE,
        "kappa_interval": KAPPA_INTERVAL,
        "min_pairs": MIN_PAIRS,
        "chart": {"timeline": report.timeline, "period": report.period, "min_pairs": MIN_PAIRS},
    }
    return render(request, "monitoring/reviewers.html", context)


# --- Rule-set drafts: backtest, then publish ------------------------------------------------------


@role_required(Role.COMPLIANCE_ADMIN)
@require_GET
def rule_drafts(request: HttpRequest) -> HttpResponse:
    drafts = RuleSetDraft.objects.select_related("base", "published", "created_by").order_by("-created_at")
    return render(request, "monitoring/rule_drafts.html", {"drafts": drafts[:100]})


def _draft_page(request: HttpRequest, draft: RuleSetDraft, **forms) -> HttpResponse:
    backtests = list(draft.backtests.select_related("active", "requested_by").order_by("-created_at"))
    latest = backtests[0] if backtests else None
    active = active_rule_set()
    current = next(
        (
            b
            for b in backtests
            if b.status == RuleSetBacktest.Status.DONE and active and b.active_id == active.pk
        ),
        None,
    )
    context = {
        "draft": draft,
        "changes": draft_changes(draft),
        "active": active,
        "backtests": backtests,
        "latest": latest,
        "current": current,
        "backtest_form": forms.get("backtest_form") or BacktestForm(),
        "publish_form": forms.get("publish_form")
        or (DraftPublishForm(initial={"backtest": current.pk, "note": draft.note}) if current else None),
    }
    return render(request, "monitoring/rule_draft.html", context, status=400 if forms else 200)


@role_required(Role.COMPLIANCE_ADMIN)
@require_GET
def rule_draft(request: HttpRequest, pk: int) -> HttpResponse:
    """A draft: its changes, its backtests (progress while one runs) and the publish form."""
    return _draft_page(
        request, get_object_or_404(RuleSetDraft.objects.select_related("base", "published"), pk=pk)
    )


@role_required(Role.COMPLIANCE_ADMIN)
@require_POST
def rule_draft_backtest(request: HttpRequest, pk: int) -> HttpResponse:
    draft = get_object_or_404(RuleSetDraft, pk=pk)
    form = BacktestForm(request.POST)
    if not form.is_valid():
        return _draft_page(request, draft, backtest_form=form)
    try:
        rule_backtest_request(draft=draft, user=request.user, days=form.cleaned_data["days"])
    except RuleSetError as exc:
        form.add_error(None, str(exc))
        return _draft_page(request, draft, backtest_form=form)
    return redirect("monitoring:rule_draft", pk=draft.pk)


@role_required(Role.COMPLIANCE_ADMIN)
@require_GET
def backtest_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """The progress line, polled by htmx while the backtest runs; once it has finished, the page
    reloads to show the results."""
    backtest = get_object_or_404(RuleSetBacktest, pk=pk)
    if backtest.status in (RuleSetBacktest.Status.DONE, RuleSetBacktest.Status.FAILED) and request.htmx:
        return HttpResponseClientRefresh()
    return render(request, "monitoring/_backtest_progress.html", {"backtest": backtest})


@role_required(Role.COMPLIANCE_ADMIN)
@require_POST
def rule_draft_publish(request: HttpRequest, pk: int) -> HttpResponse:
    draft = get_object_or_404(RuleSetDraft.objects.select_related("base", "published"), pk=pk)
    form = DraftPublishForm(request.POST)
    if not form.is_valid():
        return _draft_page(request, draft, publish_form=form)
    backtest = (
        RuleSetBacktest.objects.filter(pk=form.cleaned_data["backtest"]).select_related("active").first()
    )
    try:
        if backtest is None:
            raise RuleSetError("That backtest does not exist.")
        published = rule_set_draft_publish(
            draft=draft, backtest=backtest, user=request.user, note=form.cleaned_data["note"]
        )
    except RuleSetError as exc:
        form.add_error(None, str(exc))
        return _draft_page(request, draft, publish_form=form)
    messages.success(
        request, f"Published rule set v{published.version} on backtest #{backtest.pk}; it is active now."
    )
    return redirect("monitoring:rule_draft", pk=draft.pk)
