"""The auditor's pages: decision records, one record's evidence, the CSV export and the audit
chain check. Read-only: every unsafe method is refused for every role."""

from __future__ import annotations

import csv
from collections.abc import Iterator
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
from reviews.constants import CSV_CHUNK_SIZE
from reviews.forms import RecordFilterForm
from reviews.hashing import record_hash
from reviews.highlight import RuleSpan, build_segments
from reviews.models import ReviewDecision
from reviews.pagination import InvalidCursor
from reviews.selectors import (
    audit_chain_report,
    decision_detail,
    decision_records,
    escalated_messages,
    escalations_page,
    record_evidence,
    records_list,
    records_page,
)
from reviews.selectors.sources import message_source
from reviews.views._common import pager_links, path_prefix, query_with


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


class _Echo:
    """csv.writer target that hands each line back instead of buffering it."""

    def write(self, value: str) -> str:
        return value


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """Neutralise spreadsheet formulas in free text (CSV injection): prefix with a quote."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return "" if value is None else value


def _conversation_of(decision: ReviewDecision, kind: str) -> int | str:
    """The message's conversation id when it is of `kind` (an email thread, a chat)."""
    message = decision.message
    if message.conversation_id is None or message.conversation.kind != kind:
        return ""
    return message.conversation_id


CSV_COLUMNS: list[tuple[str, Any]] = [
    ("sequence", lambda d: d.sequence),
    ("decided_at", lambda d: d.created_at.isoformat()),
    ("external_id", lambda d: d.message.external_id),
    ("reviewer", lambda d: d.reviewer_then or d.reviewer.username),  # the username of the moment
    ("verdict", lambda d: d.verdict),
    ("claim_type", lambda d: d.claim_type.code if d.claim_type else ""),
    ("note", lambda d: d.note),
    ("escalation_reason", lambda d: d.escalation_reason),
    ("second_level", lambda d: d.is_second_level),
    ("supersedes_sequence", lambda d: d.supersedes.sequence if d.supersedes else ""),
    ("supersede_reason", lambda d: d.supersede_reason),
    ("model_version", lambda d: d.model_version.name if d.model_version else ""),
    ("model_score", lambda d: d.model_score),
    ("model_threshold", lambda d: d.model_threshold),
    ("model_flagged", lambda d: d.model_flagged),
    ("model_claim_type", lambda d: d.model_claim_type.code if d.model_claim_type else ""),
    ("qa_sample", lambda d: d.is_qa_sample),
    ("agrees_with_model", lambda d: d.agrees_with_model),
    ("claim_type_matches", lambda d: d.claim_type_matches),
    ("subject", lambda d: d.message.subject),
    ("thread_id", lambda d: _conversation_of(d, "email_thread")),
    ("conversation_id", lambda d: _conversation_of(d, "chat")),
    ("rule_codes", lambda d: " ".join(m["rule_code"] for m in d.snapshot.get("rule_matches", []))),
    ("explanation_id", lambda d: (d.snapshot.get("explanation") or {}).get("id")),
    ("explanation_passed", lambda d: (d.snapshot.get("explanation") or {}).get("passed")),
    ("content_hash", lambda d: d.content_hash),
    ("previous_hash", lambda d: d.previous_hash),
]


def _csv_lines(queryset) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow([name for name, _ in CSV_COLUMNS])
    for decision in queryset.iterator(chunk_size=CSV_CHUNK_SIZE):
        yield writer.writerow([_cell(getter(decision)) for _, getter in CSV_COLUMNS])


@role_required(*AUDIT_ROLES, write_roles=())
@require_GET
def records_csv(request: HttpRequest) -> HttpResponse:
    """All records matching the page's filters, streamed (constant memory, one query)."""
    form = RecordFilterForm(request.GET)
    if not form.is_valid():
        return render(request, "reviews/records.html", {"form": form}, status=400)
    queryset = records_list(decision_records(form.filters()), with_snapshot=True)
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response = StreamingHttpResponse(_csv_lines(queryset), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="claimwatch-decisions-{stamp}.csv"'
    return response


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
    context = {
        "source": message_source(decision.message),
        "decision": decision,
        "snapshot": snapshot,
        "names": decision.names_then,
        "shown_explanation": snapshot.get("explanation") or None,
        "evidence": evidence.check,
        "segments": build_segments(decision.message.body, words, spans),
        "recomputed_hash": record_hash(decision),
        "superseded_by": ReviewDecision.objects.filter(supersedes=decision).only("id", "sequence").first(),
        "history": ReviewDecision.objects.filter(message_id=decision.message_id)
        .select_related("reviewer")
        .only("id", "sequence", "verdict", "created_at", "reviewer__username", "supersedes_id", "snapshot"),
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
