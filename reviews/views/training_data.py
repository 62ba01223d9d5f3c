"""The compliance admin's export of reviewed decisions as training data (issue: close the loop)."""

from __future__ import annotations

from datetime import datetime, time

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.dateparse import parse_date
from django.views.decorators.http import require_GET

from core.access import role_required
from core.roles import Role
from reviews.training_data import as_jsonl, training_data_export


@role_required(Role.COMPLIANCE_ADMIN, write_roles=())
@require_GET
def training_data(request: HttpRequest) -> HttpResponse:
    raw_since = request.GET.get("since", "").strip()
    since = None
    error = ""
    if raw_since:
        day = parse_date(raw_since) if len(raw_since) == 10 else None
        if day is None:
            error = f"{raw_since!r} is not a date (YYYY-MM-DD)."
        else:
            since = timezone.make_aware(datetime.combine(day, time.min))
    if error:
        return render(request, "reviews/training_data.html", {"error": error, "since": raw_since}, status=400)
    rows, summary = training_data_export(since=since)
    if request.GET.get("download"):
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response = StreamingHttpResponse(as_jsonl(rows), content_type="application/x-ndjson; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="claimwatch-training-{stamp}.jsonl"'
        return response
    return render(
        request,
        "reviews/training_data.html",
        {"summary": summary, "since": raw_since, "sample": rows[:20]},
    )
