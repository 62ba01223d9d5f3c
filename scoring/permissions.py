"""Who may call the scoring API (see the role table in the brief)."""

from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from reviews.roles import Role, has_role

READERS = (Role.REVIEWER, Role.AUDITOR, Role.COMPLIANCE_ADMIN, Role.INGEST_SERVICE)


class CanIngest(BasePermission):
    """Only service accounts and compliance admins submit messages."""

    message = "Only ingest service accounts and compliance admins may submit messages."

    def has_permission(self, request: Request, view: object) -> bool:
        return has_role(request.user, Role.INGEST_SERVICE, Role.COMPLIANCE_ADMIN)


class CanReadMessages(BasePermission):
    """Any role of the product may read messages; an authenticated outsider may not."""

    message = "Your account has no Claimwatch role."

    def has_permission(self, request: Request, view: object) -> bool:
        return has_role(request.user, *READERS)
