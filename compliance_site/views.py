"""Site-level views: the landing page and the health check."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html")


def healthz(request: HttpRequest) -> JsonResponse:
    from compliance_site.health import health_report

    report = health_report()
    return JsonResponse(report, status=200 if report["ok"] else 503)
