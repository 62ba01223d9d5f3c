"""DRF permission classes for the role table, for the API to reuse (and the scoring API's own:
CanIngest, CanReadMessages).

    permission_classes = [HasRole.of(Role.INGEST_SERVICE)]
    permission_classes = [HasRole.of(Role.AUDITOR, Role.COMPLIANCE_ADMIN) & ReadOnly]

or set `required_roles` on the view and use `HasRole` itself.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission, IsAuthenticated
from rest_framework.request import Request

from core.roles import Role, has_role


class HasRole(BasePermission):
    """Allows users who hold one of `roles` (or the view's `required_roles`)."""

    roles: tuple[Role, ...] = ()
    message = "Your role does not allow this."

    @classmethod
    def of(cls, *roles: Role) -> type[HasRole]:
        if not roles:
            raise ValueError("HasRole.of needs at least one role")
        name = "HasRole_" + "_".join(role.value for role in roles)
        return type(name, (cls,), {"roles": tuple(roles)})

    def has_permission(self, request: Any, view: Any) -> bool:
        roles = self.roles or tuple(getattr(view, "required_roles", ()))
        return bool(roles) and has_role(request.user, *roles)


class ReadOnly(BasePermission):
    """Only safe methods (GET, HEAD, OPTIONS)."""

    message = "This resource is read-only."

    def has_permission(self, request: Any, view: Any) -> bool:
        return request.method in SAFE_METHODS


class HasRoleForMethod(BasePermission):
    """Different roles for reads and writes: set `read_roles` and `write_roles` on the view."""

    message = "Your role does not allow this."

    def has_permission(self, request: Any, view: Any) -> bool:
        attribute = "read_roles" if request.method in SAFE_METHODS else "write_roles"
        roles = tuple(getattr(view, attribute, ()))
        return bool(roles) and has_role(request.user, *roles)


# Who reads messages (body, prediction, explanations). Not the ingest service: a feed reads the
# status of its own messages only (scoring.api.MessageStatusView), or its token would be an oracle
# of the model for every feed.
READERS = (Role.REVIEWER, Role.AUDITOR, Role.COMPLIANCE_ADMIN)


class CanIngest(BasePermission):
    """Only service accounts and compliance admins submit messages."""

    message = "Only ingest service accounts and compliance admins may submit messages."

    def has_permission(self, request: Request, view: object) -> bool:
        return has_role(request.user, Role.INGEST_SERVICE, Role.COMPLIANCE_ADMIN)


class CanReadMessages(BasePermission):
    """Reviewers, auditors and compliance admins read messages; an ingest service and an
    authenticated outsider may not."""

    message = "Your role does not allow reading messages (an ingest service reads the status of its own)."

    def has_permission(self, request: Request, view: object) -> bool:
        return has_role(request.user, *READERS)


def handles(view: Any, method: str) -> bool:
    """Whether `view` has a handler for `method`, as DRF's dispatch decides (for any other method
    it answers 405, but only after the permission check)."""
    name = method.lower()
    return name in view.http_method_names and hasattr(view, name)


class MethodNotAllowedFirst:
    """A view mixin: a method the view has no handler for is a 405 (with its Allow header) for
    every signed-in caller, whatever the view's permissions. DRF checks them before it looks for
    the handler, so a role they refuse read a 403 about its role for a method nobody may use (an
    ingest token's PUT on /api/messages/ was told it may not read messages). No credentials: 401."""

    def check_permissions(self, request: Request) -> None:
        if handles(self, request.method):
            super().check_permissions(request)
        elif not IsAuthenticated().has_permission(request, self):
            self.permission_denied(request)
