"""The auditor's pages: decision records, one record's evidence, the CSV export and the audit
chain check. Read-only: every unsafe method is refused for every role."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from core.access import role_required
from core.roles import AUDIT_ROLES, Role
from reviews.audit import Comparison
from reviews.checkpoint_store import checkpoint_store
from reviews.forms import RecordFilterForm
from reviews.hashing import record_hash
from reviews.highlight import RuleSpan, build_parts, build_segments
from reviews.models import ReviewDecision
from reviews.pagination import InvalidCursor
from reviews.selectors import (
    audit_chain_report,
    decision_detail,
    decision_history,
    decision_reading,
    decision_records,
    decision_superseded_by,
    escalated_messages,
    escalations_page,
    record_evidence,
    records_list,
    records_page,
)
from reviews.selectors.records_csv import records_csv_lines
from reviews.selectors.sources import message_source, name_attachment_parts
from reviews.views._common import pager_links, path_prefix, query_with
from scoring.constants import RouteReason


@role_required(*AUDIT_ROLES, write_roles=())
@require_GET
def records(request: HttpRequest) -> HttpResponse:
    form = RecordFilterForm(request.GET)
    context: dict[str, Any] = {"form": form}
    if not form.is_valid():
        return render(request, "reviews/records.html", context, status=400)
    queryset = decision_records(form.filters())
    try:
        page = records_page(records_list(queryset), cursor=form.cleaned_data["cursor"] or None)
    except InvalidCursor as exc:
        context["error"] = str(exc)
        return render(request, "reviews/records.html", context, status=400)
    context.update(
        {
            "page": page,
            **pager_links(request, page, is_first_page=not form.cleaned_data["cursor"]),
            "export_query": query_with(request.GET),
            "record_path": path_prefix("reviews:record"),
        }
    )
    return render(request, "reviews/records.html", context)


@role_required(*AUDIT_ROLES, write_roles=())
@require_GET
def records_csv(request: HttpRequest) -> HttpResponse:
    """All records matching the page's filters, streamed (constant memory, one query)."""
    form = RecordFilterForm(request.GET)
    if not form.is_valid():
        return render(request, "reviews/records.html", {"form": form}, status=400)
    queryset = records_list(decision_records(form.filters()), with_snapshot=True)
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response = StreamingHttpResponse(records_csv_lines(queryset), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="claimwatch-decisions-{stamp}.csv"'
    return response


def _route_label(reason: str) -> str:
    """Why the message went where it went, as the snapshot recorded it (RouteReason's label)."""
    return dict(RouteReason.choices).get(reason, reason)


@role_required(*AUDIT_ROLES, write_roles=())
@require_GET
def record_detail(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        decision = decision_detail(pk)
    except ReviewDecision.DoesNotExist as exc:
        raise Http404("No such decision record.") from exc
    snapshot = decision.snapshot
    evidence = record_evidence(decision)
    # The heat-map is drawn only from words that are (or cannot be shown not to be) those the
    # reviewer saw; words that differ from the snapshot's digest are not drawn as evidence.
    words = evidence.words if evidence.check.words in (Comparison.MATCHES, Comparison.NOT_RECORDED) else []
    spans = [
        RuleSpan(m["start"], m["end"], f"{m['rule_code']} v{m['rule_set_version']}")
        for m in snapshot.get("rule_matches", [])
    ]
    # The message as the reviewer was shown it: by part, with the context it was scored in.
    reading = decision_reading(decision)
    body = decision.message.body
    parts = build_parts(body, build_segments(body, words, spans), reading.segments, reading.window_scores)
    context = {
        "source": message_source(decision.message, context=reading.context),
        "decision": decision,
        "snapshot": snapshot,
        "routed_because": _route_label(snapshot.get("message", {}).get("route_reason", "")),
        "names": decision.names_then,
        "shown_explanation": snapshot.get("explanation") or None,
        "evidence": evidence.check,
        "parts": name_attachment_parts(parts, decision.message.attachments),
        "reading_recorded": reading.recorded,
        "recomputed_hash": record_hash(decision),
        "superseded_by": decision_superseded_by(decision),
        "history": decision_history(decision),
    }
    return render(request, "reviews/record_detail.html", context)


@role_required(*AUDIT_ROLES, write_roles=())
@require_GET
def audit_chain(request: HttpRequest) -> HttpResponse:
    started = timezone.now()
    report = audit_chain_report(evidence=False)  # each record's page compares its own evidence
    elapsed_ms = (timezone.now() - started).total_seconds() * 1000
    context = {
        "report": report,
        "elapsed_ms": elapsed_ms,
        "checkpoint_location": checkpoint_store().location,
        "checkpoint_interval": settings.AUDIT_CHECKPOINT_INTERVAL_SECONDS,
    }
    return render(request, "reviews/audit_chain.html", context)


@role_required(Role.COMPLIANCE_ADMIN, write_roles=())
@require_GET
def escalations(request: HttpRequest) -> HttpResponse:
    cursor = request.GET.get("cursor") or None
    try:
        page = escalations_page(escalated_messages(), cursor=cursor)
    except InvalidCursor as exc:
        return render(request, "reviews/escalations.html", {"error": str(exc)}, status=400)
    context = {"page": page, **pager_links(request, page, is_first_page=cursor is None)}
    return render(request, "reviews/escalations.html", context)
