from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.urls import path
from django.utils.html import format_html

from registry.admin_scope import PlatformAdmin, TenantScopedAdmin

from registry.models import (
    ModelConfig,
    SandboxRun,
    SeedLog,
    ToolDefinition,
    ToolExecutionLog,
    ToolJob,
    ToolReview,
    ToolType,
)


@admin.register(ToolDefinition)
class ToolDefinitionAdmin(admin.ModelAdmin):
    list_display = ("name", "tool_type", "status", "category", "tenant_id", "enabled", "version", "updated_at")
    list_filter = ("tool_type", "status", "category", "tenant_id", "enabled")
    search_fields = ("name", "description")
    readonly_fields = ("definition_hash", "approved_hash", "embedding_model", "created_at", "updated_at", "version")
    list_per_page = 100

    def get_urls(self):
        from registry.review_views import review

        view = self.admin_site.admin_view(lambda request, object_id: review(self.admin_site, request, object_id))
        return [path("<path:object_id>/review/", view, name="registry_tool_review"), *super().get_urls()]

    def get_readonly_fields(self, request, obj=None):
        # A custom tool's status changes only through the review page's actions.
        if obj is not None and obj.tool_type == ToolType.CUSTOM:
            return (*self.readonly_fields, "status")
        return self.readonly_fields
    fieldsets = (
        (None, {"fields": ("name", "description", "tool_type", "status", "enabled", "category", "tenant_id")}),
        ("Definition", {"fields": ("input_schema", "implementation", "handler_path", "status_message", "large_output")}),
        ("Surface", {"fields": ("domain", "replaced_by_model_capability", "parent_tool", "dependencies")}),
        ("Review", {"fields": ("created_by", "rejection_reason", "test_results", "definition_hash", "version")}),
        ("Lifecycle", {"fields": ("deleted_at", "embedding_model", "created_at", "updated_at")}),
    )


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


@admin.register(ToolJob)
class ToolJobAdmin(TenantScopedAdmin):
    list_display = ("id", "tool_name", "job_type", "status", "progress", "outcome", "tenant_id", "created_at")

    @admin.display(description="progress", ordering="progress_pct")
    def progress(self, job: ToolJob) -> str:
        return format_html('<progress value="{}" max="100">{}%</progress> {}%', job.progress_pct,
                           job.progress_pct, job.progress_pct)

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


@admin.register(ModelConfig)
class ModelConfigAdmin(PlatformAdmin):
    list_display = ("role", "provider", "model", "max_output_tokens", "is_active")
    list_filter = ("provider", "is_active")


@admin.register(SeedLog)
class SeedLogAdmin(PlatformAdmin):
    list_display = ("key", "pinned", "updated_at")
    search_fields = ("key",)


@admin.register(ToolReview)
class ToolReviewAdmin(TenantScopedAdmin):
    tenant_field = "tool__tenant_id"
    list_display = ("created_at", "tool", "action", "acting_user", "definition_hash")
    list_filter = ("action",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
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
