"""Who may call the scoring API (see the role table in the brief)."""

from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from reviews.roles import Role, has_role

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
