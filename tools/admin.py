"""Admin for skills and primitives (read their content, approve or reject it, export a skill),
and the insight tools' schemas and taxonomies (read only).

Nothing is edited here: the content changes through the tools (or ``import_skill``) and
the review through tools.capability_actions, each action on the rows as they are now.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html, format_html_join

from registry.admin_scope import TenantScopedAdmin
from tools import capability_actions as actions
from tools.lib.skill_format import MANIFEST, SkillFormatError
from tools.models import CapabilityReview, InsightDefinition, Primitive, Skill


class ReviewForm(ActionForm):
    reason = forms.CharField(required=False, label="Reason (to reject, or to approve over a failed validation)")


class ReadOnlyAdmin(TenantScopedAdmin):
    """Rows staff read in their tenant and nobody edits here."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class CapabilityAdmin(ReadOnlyAdmin):
    """Shared by skills and primitives: read-only rows, approve and reject as actions."""

    action_form = ReviewForm
    actions: tuple[str, ...] = ("approve_selected", "reject_selected")
    list_display: tuple[str, ...] = ("name", "tenant_id", "status", "usable", "created_by", "updated_at")
    list_filter = ("status", "tenant_id")
    search_fields = ("name", "description")

    def has_approve_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(f"tools.approve_{self.model._meta.model_name}")

    @admin.display(boolean=True, description="usable")
    def usable(self, row: Skill | Primitive) -> bool:
        return row.is_usable()

    def _review(self, request: HttpRequest, queryset: Any, decide: Any) -> None:
        for row in queryset:
            try:
                row = decide(row, (request.POST.get("reason") or "").strip())
            except (PermissionDenied, ValidationError, actions.CapabilityConflict, SkillFormatError) as exc:
                text = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
                self.message_user(request, f"{row.name}: {text}", messages.ERROR)
                continue
            kind = actions.kind_of(row).capitalize()
            self.message_user(request, f"{kind} {row.name} is {row.status} (hash {row.content_hash[:12]})")

    @admin.action(description="Approve selected, exactly as they are now", permissions=("approve",))
    def approve_selected(self, request: HttpRequest, queryset: Any) -> None:
        self._review(
            request, queryset, lambda row, reason: actions.approve(row, acting_user=request.user, override=reason)
        )

    @admin.action(description="Reject selected (needs a reason)", permissions=("approve",))
    def reject_selected(self, request: HttpRequest, queryset: Any) -> None:
        self._review(
            request, queryset, lambda row, reason: actions.reject(row, acting_user=request.user, reason=reason)
        )


@admin.register(Skill)
class SkillAdmin(CapabilityAdmin):
    actions = (*CapabilityAdmin.actions, "export_zip")
    fields = (
        "name",
        "tenant_id",
        "status",
        "description",
        "manifest",
        "files",
        "content_hash",
        "approved_hash",
        "rejection_reason",
        "created_by",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields

    @admin.display(description=MANIFEST)
    def manifest(self, skill: Skill) -> str:
        return format_html("<pre>{}</pre>", skill.folder().files[MANIFEST].decode("utf-8", "replace"))

    @admin.display(description="files")
    def files(self, skill: Skill) -> str:
        folder = skill.folder()
        rows = [
            (path, len(data), data.decode("utf-8", "replace"))
            for path, data in sorted(folder.files.items())
            if path != MANIFEST
        ]
        return format_html_join("", "<details><summary>{} ({} bytes)</summary><pre>{}</pre></details>", rows)

    @admin.action(description="Download one selected skill as a zip", permissions=("view",))
    def export_zip(self, request: HttpRequest, queryset: Any) -> HttpResponse | None:
        if queryset.count() != 1:
            self.message_user(request, "select exactly one skill to download", messages.ERROR)
            return None
        skill = queryset.get()
        response = HttpResponse(actions.export_skill(skill), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{skill.name}.zip"'
        return response


@admin.register(Primitive)
class PrimitiveAdmin(CapabilityAdmin):
    list_display = (*CapabilityAdmin.list_display, "validated")
    fields = (
        "name",
        "tenant_id",
        "status",
        "description",
        "code_block",
        "schemas",
        "examples",
        "validation",
        "content_hash",
        "approved_hash",
        "rejection_reason",
        "created_by",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields

    @admin.display(boolean=True, description="validation passed")
    def validated(self, primitive: Primitive) -> bool:
        return actions.validation_passed(primitive)

    @admin.display(description="code")
    def code_block(self, primitive: Primitive) -> str:
        return format_html("<pre>{}</pre>", primitive.code)

    @admin.display(description="input → output schema")
    def schemas(self, primitive: Primitive) -> str:
        shown = {"input": primitive.input_schema, "output": primitive.output_schema}
        return format_html("<pre>{}</pre>", json.dumps(shown, indent=2))


@admin.register(CapabilityReview)
class CapabilityReviewAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "kind", "name", "action", "actor", "content_hash", "tenant_id")
    list_filter = ("kind", "action")
    search_fields = ("name",)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(InsightDefinition)
class InsightDefinitionAdmin(ReadOnlyAdmin):
    """Extraction schemas and taxonomies (create_schema, create_taxonomy), every version."""

    list_display = ("name", "kind", "version", "tenant_id", "created_by", "created_at")
    list_filter = ("kind", "tenant_id")
    search_fields = ("name", "description")
