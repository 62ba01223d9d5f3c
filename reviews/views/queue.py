"""The review queue: prioritised list with facet counts, and "Review next"."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.access import role_required
from core.roles import Role
from reviews.errors import ReviewError
from reviews.forms import QueueFilterForm
from reviews.pagination import InvalidCursor
from reviews.selectors import lock_held, queue_facets, queue_list, queue_messages, queue_page
from reviews.services import lock_claim_next
from reviews.views._common import is_reviewer, pager_links, path_prefix, query_with

FACET_TITLES = {
    "claim_type": "Claim type (predicted, or closest when not flagged)",
    "rule_hit": "Rule hit",
    "qa_sample": "QA sample",
    "model_version": "Model version",
    "received": "Received",
}


@role_required(Role.REVIEWER, Role.COMPLIANCE_ADMIN)
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    form = QueueFilterForm(request.GET)
    context = {"form": form, "can_review": is_reviewer(request), "facet_titles": FACET_TITLES}
    if not form.is_valid():
        return render(request, "reviews/queue.html", context, status=400)
    filters = form.filters()
    try:
        page = queue_page(queue_list(queue_messages(filters)), cursor=form.cleaned_data["cursor"] or None)
    except InvalidCursor as exc:
        context["error"] = str(exc)
        return render(request, "reviews/queue.html", context, status=400)
    facets = queue_facets(filters)
    groups = [
        {
            "name": name,
            "title": FACET_TITLES[name],
            "values": [
                {
                    "value": value,
                    "href": query_with(request.GET, **{name: None if value.selected else value.value}),
                }
                for value in values
            ],
        }
        for name, values in facets.facets.items()
    ]
    context.update(
        {
            "page": page,
            "facets": facets,
            "facet_groups": groups,
            **pager_links(request, page, is_first_page=not form.cleaned_data["cursor"]),
            "held": lock_held(request.user) if context["can_review"] else None,
            "message_path": path_prefix("reviews:message"),
        }
    )
    return render(request, "reviews/queue.html", context)


@role_required(Role.REVIEWER)
@require_POST
def queue_next(request: HttpRequest) -> HttpResponse:
    try:
        message = lock_claim_next(reviewer=request.user)
    except ReviewError as exc:
        messages.error(request, str(exc))
        return redirect("reviews:queue")
    if message is None:
        messages.info(request, "Nothing to review: every message in review is claimed or decided.")
        return redirect("reviews:queue")
    return redirect("reviews:message", pk=message.pk)
