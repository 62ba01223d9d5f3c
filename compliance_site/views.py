"""Site-level views: the role-aware landing page and the health check."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_safe


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Each role lands on what it does: reviewers on the queue, auditors on the records,
    compliance admins on escalations. A user with no role is told so."""
    from core.roles import Role, has_role
    from reviews.selectors import escalated_messages, lock_held, queue_messages

    user = request.user
    context = {
        "is_reviewer": has_role(user, Role.REVIEWER),
        "is_auditor": has_role(user, Role.AUDITOR),
        "is_admin": has_role(user, Role.COMPLIANCE_ADMIN),
        "is_service": has_role(user, Role.INGEST_SERVICE),
    }
    if context["is_reviewer"] or context["is_admin"]:
        context["queue_count"] = queue_messages().count()
    if context["is_reviewer"]:
        context["held"] = lock_held(user)
    if context["is_admin"]:
        context["escalation_count"] = escalated_messages().count()
    return render(request, "home.html", context)


@csrf_exempt
def api_not_found(request: HttpRequest, *args: object, **kwargs: object) -> JsonResponse:
    """Any address under /api/ that names no endpoint (`/api/messages/abc/`), by any method: the
    API's JSON 404, not the site's HTML page. Exempt from the CSRF check, which would otherwise
    answer a token client's POST with the HTML "CSRF verification failed" page: it reads nothing
    and changes nothing."""
    error = {"code": "not_found", "message": "There is no API endpoint at this address.", "details": None}
    return JsonResponse({"error": error}, status=404)


@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """200 {"status": "ready"} while this web process serves and reaches its database, else 503
    {"status": "unavailable"}: what a load balancer and compose's web healthcheck ask
    (compliance_site.health.readiness_report); GET or HEAD. The database's error only for a
    compliance admin, and only asked when the database answers (reading the session needs it)."""
    from compliance_site.health import readiness_report
    from core.roles import Role, has_role

    report = readiness_report()
    status = 200 if report["ok"] else 503
    summary = {"status": "ready" if report["ok"] else "unavailable"}
    if report["ok"] and has_role(request.user, Role.COMPLIANCE_ADMIN):
        return JsonResponse({**summary, **report}, status=status)
    return JsonResponse(summary, status=status)


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 {"status": "healthy"} or 503 {"status": "unhealthy"} for anyone (monitoring: the whole
    pipeline; a load balancer asks /readyz); what each check found (versions, worker nodes, database errors,
    queue ages) only for a signed-in compliance admin."""
    from compliance_site.health import health_report
    from core.roles import Role, has_role

    report = health_report()
    status = 200 if report["ok"] else 503
    summary = {"status": "healthy" if report["ok"] else "unhealthy"}
    if has_role(request.user, Role.COMPLIANCE_ADMIN):
        return JsonResponse({**summary, **report}, status=status)
    return JsonResponse(summary, status=status)
