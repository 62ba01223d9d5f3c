"""Template helpers of the reviews app: role checks for navigation and number formatting."""

from __future__ import annotations

from django import template

from core.roles import Role, has_role

register = template.Library()


@register.filter(name="has_role")
def has_role_filter(user, role_names: str) -> bool:
    """`{% if user|has_role:"reviewer,compliance_admin" %}`: true for any of the roles."""
    roles = [Role(name.strip()) for name in role_names.split(",") if name.strip()]
    return has_role(user, *roles)


@register.filter
def score(value: float | None, digits: int = 3) -> str:
    """A probability or score with fixed decimals; an em dash for none (or a missing key, which
    templates resolve to "")."""
    if value is None or isinstance(value, str):
        return "—"
    return f"{value:.{int(digits)}f}"


@register.filter
def yesno_none(value: bool | None) -> str:
    return {True: "yes", False: "no"}.get(value, "—")
