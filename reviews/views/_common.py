"""Small helpers shared by the review views."""

from __future__ import annotations

from django.http import HttpRequest, QueryDict
from django.urls import reverse

from core.roles import Role, has_role


def is_reviewer(request: HttpRequest) -> bool:
    return has_role(request.user, Role.REVIEWER)


def is_admin(request: HttpRequest) -> bool:
    return has_role(request.user, Role.COMPLIANCE_ADMIN)


def pager_links(request, page, *, is_first_page: bool) -> dict[str, object]:
    """The template context of templates/reviews/_pager.html for a keyset page."""
    return {
        "next_href": query_with(request.GET, cursor=page.next_cursor) if page.next_cursor else None,
        "first_href": query_with(request.GET),
        "is_first_page": is_first_page,
    }


def query_with(params: QueryDict, **changes: str | None) -> str:
    """The query string of `params` with `changes` applied (None removes a key); the page
    cursor is always dropped, because a changed filter starts again at the first page."""
    query = params.copy()
    query.pop("cursor", None)
    for key, value in changes.items():
        query.pop(key, None)
        if value is not None:
            query[key] = value
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else "?"


def path_prefix(name: str) -> str:
    """The path of a `<int:pk>/` route without its pk ("/review/messages/"), so a list can build
    fifty links by concatenation instead of fifty URL reversals."""
    path = reverse(name, args=[0])
    if not path.endswith("/0/"):
        raise ValueError(f"{name} does not end in <pk>/")
    return path[:-2]
