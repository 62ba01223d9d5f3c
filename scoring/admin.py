"""Admin for compliance admins: claim types (names and descriptions) and rule-set versions.

Only superusers and staff users in the compliance_admin group see these pages. A published rule
set is read-only here; "Draft a new version" opens an editor whose result is saved as a draft
(scoring.services.rule_sets.rule_set_draft_create). Nothing routes differently until the draft is
backtested and published on its page (/monitoring/rule-drafts/<id>/, monitoring.backtest), so
earlier matches keep the version that produced them and no edit is published blind. The one
step publish is the roll back action: it asks for a reason, then publishes an earlier version
again unchanged (rules that ran before); the new version's page says what it restores and why.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from core.roles import Role, has_role
from scoring.errors import RuleSetError
from scoring.forms import PublishForm, RollBackForm, RuleFormSet, initial_for
from scoring.models import ClaimType, Rule, RuleSet
from scoring.rules import NEGATION_WINDOW
from scoring.selectors import active_rule_set, rule_sets_with_counts, rules_of
from scoring.services.rule_sets import rule_draft_of, rule_set_draft_create, rule_set_roll_back


def is_compliance_admin(request: HttpRequest) -> bool:
    user = request.user
    return bool(user.is_active and user.is_staff and has_role(user, Role.COMPLIANCE_ADMIN))


class ComplianceAdminOnly:
    """Model-admin permissions: compliance admins (with staff status) and superusers only."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_compliance_admin(request)

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return is_compliance_admin(request)


@admin.register(ClaimType)
class ClaimTypeAdmin(ComplianceAdminOnly, admin.ModelAdmin):
    list_display = ("position", "code", "name")
    fields = ("code", "position", "name", "description")
    readonly_fields = ("code", "position")  # classes of the classifier head: never renamed

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return is_compliance_admin(request)


class RuleInline(admin.TabularInline):
    model = Rule
    fields = (
        "code",
        "claim_type",
        "pattern",
        "context_terms",
        "context_window",
        "negation_guard",
        "enabled",
        "description",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Rule]:
        return super().get_queryset(request).select_related("claim_type", "rule_set")

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return is_compliance_admin(request)


@admin.register(RuleSet)
class RuleSetAdmin(ComplianceAdminOnly, admin.ModelAdmin):
    list_display = ("version", "is_active", "note", "published_on", "rule_count", "created_by", "created_at")
    list_display_links = ("version",)
    fields = ("version", "is_active", "note", "created_by", "created_at", "published_on")
    readonly_fields = fields
    inlines = [RuleInline]
    actions = ["roll_back"]
    change_form_template = "admin/scoring/ruleset/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[RuleSet]:
        return rule_sets_with_counts()

    @admin.display(description="published on")
    def published_on(self, obj: RuleSet) -> str:
        """The draft and backtest this version was published on, or the version it rolled back to
        with the reason (the note); a seeded version has neither."""
        if obj.restores_id is not None:
            return format_html(
                'roll back to <a href="{}">v{}</a>, reason: {}',
                reverse("admin:scoring_ruleset_change", args=[obj.restores_id]),
                obj.restores.version,
                obj.note,
            )
        if obj.backtest_id is None:
            return "no backtest (seeded)"
        return format_html(
            '<a href="{}">draft #{}, backtest #{}</a>',
            reverse("monitoring:rule_draft", args=[obj.backtest.draft_id]),
            obj.backtest.draft_id,
            obj.backtest_id,
        )

    @admin.display(description="rules", ordering="rule_count")
    def rule_count(self, obj: RuleSet) -> int:
        return obj.rule_count

    # Published versions are history: nobody adds, edits or deletes one in place.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict:
        # Django only offers actions to users with a matching permission; ours is publish.
        actions = super().get_actions(request)
        if not is_compliance_admin(request):
            actions.pop("roll_back", None)
        return actions

    @admin.action(description="Roll back: publish the selected earlier version again, unchanged (asks why)")
    def roll_back(self, request: HttpRequest, queryset: QuerySet[RuleSet]) -> HttpResponse | None:
        """First a page that asks for the reason; its submit rolls back (rule_set_roll_back)."""
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one rule-set version to roll back to.", messages.ERROR)
            return None
        target = queryset.get()
        active = active_rule_set()
        if "apply" in request.POST:
            form = RollBackForm(request.POST)
            if form.is_valid():
                try:
                    published = rule_set_roll_back(
                        to=target,
                        user=request.user,
                        reason=form.cleaned_data["reason"],
                        expected_active_version=form.cleaned_data["expected_active_version"],
                    )
                except RuleSetError as exc:
                    form.add_error(None, str(exc))
                else:
                    done = f"Published v{published.version} (v{target.version} again); it is active now."
                    self.message_user(request, done)
                    return None
        else:
            form = RollBackForm(initial={"expected_active_version": active.version if active else None})
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Roll back to v{target.version}",
            "target": target,
            "active": active,
            "form": form,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/scoring/ruleset/roll_back.html", context)

    def get_urls(self) -> list:
        urls = [
            path(
                "<int:object_id>/draft/",
                self.admin_site.admin_view(self.draft_view),
                name="scoring_ruleset_draft",
            )
        ]
        return urls + super().get_urls()

    def draft_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """Edit a copy of a version and save it as a draft, to backtest and then publish."""
        if not is_compliance_admin(request):
            raise PermissionDenied
        base = get_object_or_404(RuleSet, pk=object_id)
        active = active_rule_set()
        base_drafts = [rule_draft_of(rule) for rule in rules_of(base)]
        initial = [initial_for(draft) for draft in base_drafts]
        if request.method == "POST":
            form = PublishForm(request.POST)
            formset = RuleFormSet(request.POST, initial=initial, prefix="rules")
            if form.is_valid() and formset.is_valid():
                add, change, remove = formset.changes()
                try:
                    draft = rule_set_draft_create(
                        base=base,
                        user=request.user,
                        note=form.cleaned_data["note"],
                        add=add,
                        change=change,
                        remove=remove,
                    )
                except RuleSetError as exc:
                    form.add_error(None, str(exc))
                else:
                    self.message_user(
                        request, f"Saved draft #{draft.pk}: backtest it, then publish it from its page."
                    )
                    return HttpResponseRedirect(reverse("monitoring:rule_draft", args=[draft.pk]))
        else:
            form = PublishForm(initial={"expected_active_version": active.version if active else None})
            formset = RuleFormSet(initial=initial, prefix="rules")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Draft a new version based on v{base.version}",
            "base": base,
            "active": active,
            "form": form,
            "formset": formset,
            "negation_window": NEGATION_WINDOW,
        }
        return TemplateResponse(request, "admin/scoring/ruleset/draft.html", context)
