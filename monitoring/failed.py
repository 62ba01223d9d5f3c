"""The compliance admin's page of failed messages: why each failed, its retries, and "retry"."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.access import role_required
from core.roles import Role
from monitoring.forms import RetryForm
from scoring.errors import RetryError
from scoring.models import Message
from scoring.selectors import failed_messages
from scoring.services.failed import message_retry

PAGE_SIZE = 50


@role_required(Role.COMPLIANCE_ADMIN)
@require_GET
def failed_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(failed_messages(), PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "max_attempts": settings.MAX_ATTEMPTS,
        "max_oom_deferrals": settings.MAX_OOM_DEFERRALS,
        "max_sweep_requeues": settings.MAX_SWEEP_REQUEUES,
    }
    return render(request, "monitoring/failed.html", context)


@role_required(Role.COMPLIANCE_ADMIN)
@require_POST
def failed_retry(request: HttpRequest, pk: int) -> HttpResponse:
    message = get_object_or_404(Message, pk=pk)
    form = RetryForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say why the message is retried: the reason is part of the audit record.")
        return redirect("monitoring:failed")
    try:
        message_retry(message=message, user=request.user, reason=form.cleaned_data["reason"])
    except RetryError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{message.external_id} is queued for scoring again.")
    return redirect("monitoring:failed")
