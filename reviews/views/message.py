"""One message: its evidence, the attention diagnostic's data, and the decision actions."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_POST

from core.access import role_required
from core.roles import Role
from explanations.models import AttentionDiagnostic
from reviews.attention_data import AttentionDataError, heatmap_payload, parse_selection
from reviews.errors import (
    AlreadyDecided,
    DecisionInvalid,
    LockHeldByOther,
    LockNotHeld,
    NotPermitted,
    ReviewError,
)
from reviews.forms import CorrectionForm, DecisionForm, SecondLevelForm
from reviews.selectors import attention_diagnostic, double_review_pair, message_evidence
from reviews.selectors.sources import CONVERSATION_PAGE, conversation_messages, message_source
from reviews.services import decision_record, lock_claim, lock_release
from reviews.views._common import is_admin, is_reviewer
from scoring.constants import MessageStatus
from scoring.models import ClaimType, Conversation, Message

READ_ROLES = (Role.REVIEWER, Role.COMPLIANCE_ADMIN, Role.AUDITOR)
ERROR_STATUS = {NotPermitted: 403, LockNotHeld: 409, LockHeldByOther: 409, AlreadyDecided: 409}


def _render(
    request: HttpRequest, pk: int, *, forms: dict[str, Any] | None = None, error: str = "", status: int = 200
) -> HttpResponse:
    try:
        evidence = message_evidence(pk, viewer=request.user)
    except Message.DoesNotExist as exc:
        raise Http404("No such message.") from exc
    message, lock, now = evidence.message, evidence.lock, timezone.now()
    reviewer, admin = is_reviewer(request), is_admin(request)
    in_review = message.status == MessageStatus.IN_REVIEW
    mine = lock is not None and lock.reviewer_id == request.user.pk
    live_other = lock is not None and not mine and lock.expires_at > now
    # A message in review that this reviewer decided waits for somebody else's blind second review.
    decided_by_me = in_review and any(d.reviewer_id == request.user.pk for d in evidence.decisions)
    forms = forms or {}
    context = {
        "source": message_source(
            message, context=evidence.prediction.context if evidence.prediction else None
        ),
        "evidence": evidence,
        "message": message,
        "prediction": evidence.prediction,
        "explanation": evidence.explanation,
        "lock": lock,
        "lock_is_mine": mine,
        "lock_expired": lock is not None and lock.expires_at <= now,
        "locked_by_other": live_other,
        "can_review": reviewer,
        "can_claim": reviewer and in_review and not mine and not live_other and not decided_by_me,
        "awaits_second_review": reviewer and decided_by_me,
        "double_review": double_review_pair(message.pk) if admin else None,
        "claim_types": ClaimType.objects.order_by("position"),
        "error": error,
    }
    if evidence.attention is not None:
        context["attention_config"] = {
            "url": reverse("reviews:attention", args=[message.pk]),
            "layers": evidence.attention.layers,
            "heads": evidence.attention.heads,
            "plotly": static("vendor/plotly/plotly.min.js"),
        }
    if reviewer and in_review and mine:
        context["decision_form"] = forms.get("decision") or DecisionForm()
    if admin and message.status == MessageStatus.ESCALATED:
        context["second_level_form"] = forms.get("second_level") or SecondLevelForm()
    if admin and message.status == MessageStatus.DECIDED and evidence.latest_decision is not None:
        context["correction_form"] = forms.get("correction") or CorrectionForm(
            initial={"supersedes": evidence.latest_decision.pk}
        )
        context["correction_open"] = "correction" in forms
    response = render(request, "reviews/message.html", context, status=status)
    # Its forms act on the message's state now: Back after a decision must fetch the page again
    # (showing it decided), not show the stale form from the browser's cache.
    add_never_cache_headers(response)
    return response


@role_required(*READ_ROLES, write_roles=())
@require_GET
def message_page(request: HttpRequest, pk: int) -> HttpResponse:
    return _render(request, pk)


@role_required(*READ_ROLES, write_roles=())
@require_GET
def message_attention(request: HttpRequest, pk: int) -> JsonResponse:
    """One attention matrix as JSON: ?layer=<0-based>&head=<0-based>, or ?layer=rollout."""
    try:
        diagnostic = attention_diagnostic(pk)
    except AttentionDiagnostic.DoesNotExist as exc:
        raise Http404("This message has no attention diagnostic.") from exc
    try:
        layer, head = parse_selection(request.GET.get("layer"), request.GET.get("head"))
        payload = heatmap_payload(
            tokens=diagnostic.tokens,
            weights_blob=diagnostic.weights,
            rollout_blob=diagnostic.rollout,
            layer=layer,
            head=head,
            normalisation=diagnostic.normalisation,
        )
    except AttentionDataError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return JsonResponse(payload)


@role_required(*READ_ROLES, write_roles=())
@require_GET
def conversation_page(request: HttpRequest, pk: int) -> HttpResponse:
    """An email thread or a chat conversation: its messages in time order."""
    try:
        conversation, lines = conversation_messages(pk)
    except Conversation.DoesNotExist as exc:
        raise Http404("No such conversation.") from exc
    context = {"conversation": conversation, "lines": lines, "truncated": len(lines) >= CONVERSATION_PAGE}
    return render(request, "reviews/conversation.html", context)


def _service_error(request: HttpRequest, pk: int, exc: ReviewError, forms: dict[str, Any] | None = None):
    if isinstance(exc, AlreadyDecided):
        # A double click or a resubmitted form: say so, show what was recorded, write nothing.
        messages.info(request, str(exc))
        return redirect("reviews:message", pk=pk)
    return _render(request, pk, forms=forms, error=str(exc), status=ERROR_STATUS.get(type(exc), 400))


@role_required(Role.REVIEWER)
@require_POST
def message_claim(request: HttpRequest, pk: int) -> HttpResponse:
    message = get_object_or_404(Message, pk=pk)
    try:
        lock_claim(reviewer=request.user, message=message)
    except ReviewError as exc:
        return _service_error(request, pk, exc)
    return redirect("reviews:message", pk=pk)


@role_required(Role.REVIEWER)
@require_POST
def message_release(request: HttpRequest, pk: int) -> HttpResponse:
    message = get_object_or_404(Message, pk=pk)
    try:
        lock_release(reviewer=request.user, message=message)
    except ReviewError as exc:
        return _service_error(request, pk, exc)
    messages.info(request, f"Message {message.external_id} is back in the queue.")
    return redirect("reviews:queue")


@role_required(Role.REVIEWER)
@require_POST
def message_decide(request: HttpRequest, pk: int) -> HttpResponse:
    message = get_object_or_404(Message, pk=pk)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        return _render(request, pk, forms={"decision": form}, status=400)
    data = form.cleaned_data
    try:
        decision = decision_record(
            message=message,
            reviewer=request.user,
            verdict=data["verdict"],
            claim_type=data["claim_type"],
            note=data["note"],
            escalation_reason=data["escalation_reason"],
        )
    except ReviewError as exc:
        return _service_error(request, pk, exc, {"decision": form})
    messages.success(
        request,
        f"Decision #{decision.sequence} recorded on {message.external_id}: {decision.get_verdict_display()}.",
    )
    return redirect("reviews:queue")


@role_required(Role.COMPLIANCE_ADMIN)
@require_POST
def message_second_level(request: HttpRequest, pk: int) -> HttpResponse:
    message = get_object_or_404(Message, pk=pk)
    if message.status != MessageStatus.ESCALATED:
        # Refused like any decision on a message in the wrong state (400). Left to the service, a
        # decided message was redirected as if this form had been sent twice, and one in review
        # was judged as a reviewer's first-level decision.
        refusal = DecisionInvalid(
            f"Message {message.external_id} is {message.get_status_display().lower()}, not escalated: "
            "a second-level decision is taken only on an escalated message; nothing was recorded."
        )
        return _service_error(request, pk, refusal)
    form = SecondLevelForm(request.POST)
    if not form.is_valid():
        return _render(request, pk, forms={"second_level": form}, status=400)
    data = form.cleaned_data
    try:
        decision = decision_record(
            message=message,
            reviewer=request.user,
            verdict=data["verdict"],
            claim_type=data["claim_type"],
            note=data["note"],
        )
    except ReviewError as exc:
        return _service_error(request, pk, exc, {"second_level": form})
    messages.success(
        request, f"Second-level decision #{decision.sequence} recorded on {message.external_id}."
    )
    return redirect("reviews:escalations")


@role_required(Role.COMPLIANCE_ADMIN)
@require_POST
def message_correct(request: HttpRequest, pk: int) -> HttpResponse:
    message = get_object_or_404(Message, pk=pk)
    form = CorrectionForm(request.POST)
    if not form.is_valid():
        return _render(request, pk, forms={"correction": form}, status=400)
    data = form.cleaned_data
    try:
        decision = decision_record(
            message=message,
            reviewer=request.user,
            verdict=data["verdict"],
            claim_type=data["claim_type"],
            note=data["note"],
            supersedes=data["supersedes"],
            supersede_reason=data["supersede_reason"],
        )
    except ReviewError as exc:
        return _service_error(request, pk, exc, {"correction": form})
    messages.success(
        request, f"Correction #{decision.sequence} recorded; it supersedes #{data['supersedes'].sequence}."
    )
    return redirect("reviews:message", pk=pk)
