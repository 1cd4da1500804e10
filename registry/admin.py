"""Admin for the registry's models; custom tools change only through registry.custom_tools."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.html import format_html

from eunice.platform_admin import PlatformAdmin
from registry import custom_tools
from registry.admin_scope import TenantScopedAdmin
from registry.models import (
    ApprovalRule,
    JobRun,
    PendingApproval,
    SandboxRun,
    SeedLog,
    ToolDefinition,
    ToolExecutionLog,
    ToolJob,
    ToolReview,
    ToolStatus,
    ToolType,
    review_tenants,
)


class ToolDefinitionForm(forms.ModelForm):
    """Checks a custom tool the way the service functions do, so problems show on the form."""

    acting_user: Any = None  # set per request by ToolDefinitionAdmin.get_form

    class Meta:
        model = ToolDefinition
        fields = "__all__"

    def clean(self) -> dict:
        data = super().clean()
        # On a change the type is read-only: the instance's is the one that counts.
        tool_type = self.instance.tool_type if self.instance.pk else data.get("tool_type")
        if tool_type != ToolType.CUSTOM:
            return data
        if self.instance.pk is None:
            self._clean_new(data)
        current = {
            field: data.get(field, getattr(self.instance, field))
            for field in ("name", "implementation", "input_schema", "description", "tenant_id", "dependencies")
        }
        try:
            data["dependencies"] = custom_tools.check_definition(
                name=current["name"],
                code=current["implementation"],
                input_schema=current["input_schema"],
                description=current["description"],
                tenant_id=current["tenant_id"],
                dependencies=current["dependencies"] or [],
            )
        except ValidationError as exc:
            self.add_error(None, exc)
        return data

    def _clean_new(self, data: dict) -> None:
        if data.get("status") != ToolStatus.DRAFT:
            self.add_error(
                "status", "a custom tool starts as a draft: save it, then submit it for testing from its review page"
            )
        tenant, allowed = data.get("tenant_id"), review_tenants(self.acting_user)
        if tenant and allowed is not None and tenant not in allowed:
            self.add_error(
                "tenant_id", f"you may create custom tools only for tenant(s) {', '.join(allowed) or '(none)'}"
            )


@admin.register(ToolDefinition)
class ToolDefinitionAdmin(admin.ModelAdmin):
    """Every tool; a custom tool's changes and lifecycle go through registry.custom_tools."""

    form = ToolDefinitionForm
    list_display = (
        "name",
        "tool_type",
        "status",
        "category",
        "tenant_id",
        "enabled",
        "version",
        "updated_at",
        "review_link",
    )
    list_filter = ("tool_type", "status", "category", "tenant_id", "enabled")
    search_fields = ("name", "description")
    readonly_fields = (
        "definition_hash",
        "approved_hash",
        "test_results",
        "embedding_model",
        "created_at",
        "updated_at",
        "version",
    )
    # A custom tool's status moves only through the lifecycle actions; what it is
    # and whom it serves are fixed once created (a new name or tenant is a new tool).
    custom_readonly_fields = (
        "status",
        "name",
        "tenant_id",
        "handler_path",
        "created_by",
        "rejection_reason",
        "deleted_at",
    )
    actions = ("submit_for_testing",)
    list_per_page = 100
    fieldsets = (
        (None, {"fields": ("name", "description", "tool_type", "status", "enabled", "category", "tenant_id")}),
        (
            "Definition",
            {
                "fields": (
                    "input_schema",
                    "implementation",
                    "handler_path",
                    "dependencies",
                    "status_message",
                    "large_output",
                )
            },
        ),
        ("Surface", {"fields": ("domain", "replaced_by_model_capability", "parent_tool")}),
        (
            "Review",
            {
                "fields": (
                    "created_by",
                    "rejection_reason",
                    "test_results",
                    "definition_hash",
                    "approved_hash",
                    "version",
                )
            },
        ),
        ("Lifecycle", {"fields": ("deleted_at", "embedding_model", "created_at", "updated_at")}),
    )

    def get_urls(self):  # noqa: ANN201
        from registry.review_views import review

        view = self.admin_site.admin_view(lambda request, object_id: review(self.admin_site, request, object_id))
        return [path("<path:object_id>/review/", view, name="registry_tool_review"), *super().get_urls()]

    def get_queryset(self, request: HttpRequest):  # noqa: ANN201
        return super().get_queryset(request).administrable_by(request.user)

    def get_form(self, request: HttpRequest, obj=None, change=False, **kwargs):  # noqa: ANN001, ANN201
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"acting_user": request.user})

    def get_readonly_fields(self, request: HttpRequest, obj=None):  # noqa: ANN001, ANN201
        if obj is None:
            return self.readonly_fields
        # A tool's type is fixed: a system tool turned custom would skip the lifecycle.
        if obj.tool_type == ToolType.CUSTOM:
            return (*self.readonly_fields, "tool_type", *self.custom_readonly_fields)
        return (*self.readonly_fields, "tool_type")

    @admin.display(description="review")
    def review_link(self, tool: ToolDefinition) -> str:
        if tool.tool_type != ToolType.CUSTOM:
            return ""
        return format_html('<a href="{}">review</a>', reverse("admin:registry_tool_review", args=[tool.pk]))

    def save_model(self, request: HttpRequest, obj: ToolDefinition, form: forms.ModelForm, change: bool) -> None:
        if obj.tool_type != ToolType.CUSTOM:
            return super().save_model(request, obj, form, change)
        try:
            if change:
                self._edit_custom(request, obj, form)
            else:
                created = custom_tools.register_custom_tool(
                    name=obj.name,
                    code=obj.implementation,
                    input_schema=obj.input_schema,
                    description=obj.description,
                    tenant_id=obj.tenant_id,
                    dependencies=obj.dependencies or [],
                    created_by=f"admin:{request.user.get_username()}",
                    acting_user=request.user,
                    submit=False,
                )
                obj.pk = created.pk
        except ValidationError as exc:
            # The form checked the same rules; this is a race with another change.
            raise PermissionDenied("; ".join(exc.messages)) from None
        return None

    def _edit_custom(self, request: HttpRequest, obj: ToolDefinition, form: forms.ModelForm) -> None:
        names = {"implementation": "code"}
        fields = {names.get(key, key): form.cleaned_data[key] for key in form.changed_data}
        custom_tools.edit_custom_tool(ToolDefinition.objects.get(pk=obj.pk), acting_user=request.user, **fields)

    def response_add(self, request: HttpRequest, obj: ToolDefinition, post_url_continue=None):  # noqa: ANN001, ANN201
        if obj.tool_type == ToolType.CUSTOM:
            # The draft's next step, submitting it for testing, is on its review page.
            return redirect("admin:registry_tool_review", obj.pk)
        return super().response_add(request, obj, post_url_continue)

    @admin.action(description="Submit for testing (runs the auditor)", permissions=("change",))
    def submit_for_testing(self, request: HttpRequest, queryset) -> None:  # noqa: ANN001
        for tool in queryset.filter(tool_type=ToolType.CUSTOM):
            try:
                tool = custom_tools.submit_for_testing(tool, acting_user=request.user)
            except custom_tools.ReviewConflict as exc:
                self.message_user(request, str(exc), messages.ERROR)
                continue
            self.message_user(request, f"{tool.name}: testing, audit {custom_tools.audit_state(tool)}")


@admin.register(ToolExecutionLog)
class ToolExecutionLogAdmin(TenantScopedAdmin):
    list_display = ("created_at", "tool_name", "tenant_id", "user_id", "success", "outcome", "execution_ms")
    list_filter = ("success", "outcome", "outcome_kind", "tool_name", "tenant_id")
    search_fields = ("tool_name", "error", "conversation_id", "user_id")
    date_hierarchy = "created_at"
    list_per_page = 100

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ApprovalRule)
class ApprovalRuleAdmin(TenantScopedAdmin):
    """Which calls wait for a person's approval (docs/approvals.md)."""

    list_display = ("name", "kind", "tool_name", "tenant_id", "timeout_seconds", "enabled")
    list_filter = ("kind", "enabled", "tenant_id")
    search_fields = ("name", "tool_name")


@admin.register(PendingApproval)
class PendingApprovalAdmin(TenantScopedAdmin):
    """Every call that waited for a person, and what they decided (read only: decided in the chat or REST)."""

    list_display = ("created_at", "tool_name", "status", "source", "user", "decided_by", "decided_at", "tenant_id")
    list_filter = ("status", "source", "tool_name", "tenant_id")
    search_fields = ("tool_name", "conversation_id")
    list_select_related = ("user", "decided_by")
    date_hierarchy = "created_at"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ToolJob)
class ToolJobAdmin(TenantScopedAdmin):
    list_display = ("id", "tool_name", "job_type", "status", "progress", "outcome", "tenant_id", "created_at")

    @admin.display(description="progress", ordering="progress_pct")
    def progress(self, job: ToolJob) -> str:
        return format_html(
            '<progress value="{}" max="100">{}%</progress> {}%', job.progress_pct, job.progress_pct, job.progress_pct
        )

    @admin.display(description="outcome")
    def outcome(self, job: ToolJob) -> str:
        result = job.result or {}
        if "error" in result:
            return result["error"][:200]
        if "verdict" in result:
            return f"audit {'passed' if result.get('audit_passed') else 'failed'}; auditor: {result['verdict']}"
        return ""

    list_filter = ("job_type", "status", "tenant_id")
    search_fields = ("id", "tool_name")
    readonly_fields = ("created_at", "updated_at")


@admin.register(JobRun)
class JobRunAdmin(PlatformAdmin):
    """Background jobs and what became of them (docs/operations.md): read-only, written by the workers."""

    list_display = ("id", "func", "status", "attempts", "error", "host", "pid", "created_at", "finished_at")
    list_filter = ("status", "func")
    search_fields = ("id", "func")

    def has_add_permission(self, request) -> bool:  # noqa: ANN001
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # noqa: ANN001
        return False


@admin.register(SeedLog)
class SeedLogAdmin(PlatformAdmin):
    list_display = ("key", "pinned", "updated_at")
    search_fields = ("key",)


@admin.register(ToolReview)
class ToolReviewAdmin(TenantScopedAdmin):
    """The review history: read-only, never deleted, and only of tools the viewer may review."""

    tenant_field = "tool__tenant_id"

    list_display = ("created_at", "tool", "action", "acting_user", "definition_hash", "reason")
    list_filter = ("action",)

    def get_queryset(self, request: HttpRequest):  # noqa: ANN201
        return super().get_queryset(request).filter(tool__in=ToolDefinition.objects.reviewable_by(request.user))

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(SandboxRun)
class SandboxRunAdmin(TenantScopedAdmin):
    list_display = ("created_at", "tool_name", "tenant_id", "ok", "stopped_by", "wall_ms")
    list_filter = ("ok", "stopped_by", "tool_name")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class TenantUserAdmin(TenantScopedAdmin, UserAdmin):
    """Staff see and edit the users of their tenant only; superusers every user."""

    tenant_field = "tenant_membership__tenant_id"

    def get_readonly_fields(self, request, obj=None):
        # Only a superuser makes a superuser: one would see every tenant.
        fields = super().get_readonly_fields(request, obj)
        return fields if request.user.is_superuser else (*fields, "is_superuser")


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), TenantUserAdmin)

from registry.mcp import admin as _mcp_admin  # noqa: E402,F401  (registers My Connections and Marketplace)
