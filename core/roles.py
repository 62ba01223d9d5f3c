"""The roles of the brief's role table, as Django groups (created by a data migration)."""

from __future__ import annotations

from enum import StrEnum

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


class Role(StrEnum):
    REVIEWER = "reviewer"
    AUDITOR = "auditor"
    COMPLIANCE_ADMIN = "compliance_admin"
    INGEST_SERVICE = "ingest_service"


# Who reads decision records (the brief's role table).
AUDIT_ROLES = (Role.AUDITOR, Role.COMPLIANCE_ADMIN)


def has_role(user: AbstractBaseUser | AnonymousUser, *roles: Role) -> bool:
    """True when the user is active and in one of `roles`. Superusers count as admins."""
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser and Role.COMPLIANCE_ADMIN in roles:
        return True
    names = getattr(user, "_claimwatch_roles", None)
    if names is None:
        names = set(user.groups.values_list("name", flat=True))
        user._claimwatch_roles = names  # cached per request-bound user object
    return any(role.value in names for role in roles)
