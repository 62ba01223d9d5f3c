"""Admin site for the reviews app. Decision records are read-only here: no add, change or
delete for anyone (corrections go through the decision service as new records). Compliance
admins may view them; nobody else sees these pages."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from core.roles import Role, has_role
from reviews.models import DoubleReview, DoubleReviewRule, ReviewDecision, ReviewLock


class _ComplianceAdminViewOnly(admin.ModelAdmin):
    def has_module_permission(self, request: HttpRequest) -> bool:
        return has_role(request.user, Role.COMPLIANCE_ADMIN)

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return has_role(request.user, Role.COMPLIANCE_ADMIN)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(ReviewDecision)
class ReviewDecisionAdmin(_ComplianceAdminViewOnly):
    list_display = (
        "sequence",
        "created_at",
        "message",
        "reviewer",
        "verdict",
        "claim_type",
        "agrees_with_model",
    )
    list_filter = ("verdict", "is_second_level", "agrees_with_model")
    search_fields = ("message__external_id",)
    list_select_related = ("message", "reviewer", "claim_type")
    ordering = ("-sequence",)
    actions = None

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [field.name for field in self.model._meta.fields]


@admin.register(ReviewLock)
class ReviewLockAdmin(_ComplianceAdminViewOnly):
    list_display = ("message", "reviewer", "locked_at", "expires_at")
    list_select_related = ("message", "reviewer")
    actions = None

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        # An admin may free a stuck lock; locks are not part of the audit record.
        return has_role(request.user, Role.COMPLIANCE_ADMIN)


@admin.register(DoubleReviewRule)
class DoubleReviewRuleAdmin(admin.ModelAdmin):
    """Per-claim-type double-review rates: data that compliance admins edit (reviews.double_review).
    A claim type without a rule is sampled at DOUBLE_REVIEW_RATE."""

    list_display = ("claim_type", "rate", "note", "updated_at")
    list_select_related = ("claim_type",)
    fields = ("claim_type", "rate", "note")

    def _is_admin(self, request: HttpRequest) -> bool:
        return has_role(request.user, Role.COMPLIANCE_ADMIN)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._is_admin(request)

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return self._is_admin(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._is_admin(request)

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return self._is_admin(request)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return self._is_admin(request)


@admin.register(DoubleReview)
class DoubleReviewAdmin(_ComplianceAdminViewOnly):
    """Which messages were drawn for a blind second review, and what came of it (read-only)."""

    list_display = ("message", "claim_type", "reason", "rate", "outcome", "sampled_at", "second_at")
    list_filter = ("outcome", "reason", "claim_type")
    list_select_related = ("message", "claim_type")
    actions = None

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [field.name for field in self.model._meta.fields]
