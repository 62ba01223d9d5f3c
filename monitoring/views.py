"""The compliance admin's monitoring page: plotly charts, each drawn by static/js/monitoring.js
from its JSON endpoint; the alerts are also listed by the server, so they read without JS."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from monitoring import selectors
from monitoring.api_urls import ENDPOINTS
from monitoring.forms import MonitoringFilterForm
from monitoring.services import rollup_refresh
from monitoring.stats import ALERT_RULE, PSI_MAJOR, PSI_MODERATE, RECALL_ESTIMATOR
from monitoring.timeline import DAY
from reviews.access import role_required
from reviews.roles import Role

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
