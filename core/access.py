"""Role enforcement for pages: a decorator for (function) views.

Anonymous users are sent to the login page; a signed-in user without one of the roles gets
403. Safe (read) and unsafe (write) methods can require different roles, so a page an auditor
may read still refuses every POST they try.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed

from core.roles import Role, has_role

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def check_roles(request: HttpRequest, roles: Iterable[Role], write_roles: Iterable[Role] | None) -> None:
    """Raise PermissionDenied unless the user holds a role allowed for this request method."""
    allowed = tuple(roles) if request.method in SAFE_METHODS or write_roles is None else tuple(write_roles)
    if not has_role(request.user, *allowed):
        raise PermissionDenied("Your role does not give access to this page.")


def role_required(*roles: Role, write_roles: Iterable[Role] | None = None) -> Callable:
    """Decorate a view: readable by `roles`; unsafe methods need `write_roles` when given.
    `write_roles=()` marks a read-only page, a view that takes GET only (`require_GET`): a
    signed-in user's POST to it is 405 (the method is wrong for everybody), not 403."""
    if not roles:
        raise ValueError("role_required needs at least one role")
    write_roles = None if write_roles is None else tuple(write_roles)

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if write_roles == () and request.method not in SAFE_METHODS:
                return HttpResponseNotAllowed(["GET"])
            check_roles(request, roles, write_roles)
            return view(request, *args, **kwargs)

        wrapped.required_roles = roles  # type: ignore[attr-defined]
        return wrapped

    return decorator
