from django.contrib import admin

from registry.models import ModelConfig, SeedLog, ToolDefinition, ToolExecutionLog, ToolJob


@admin.register(ToolDefinition)
class ToolDefinitionAdmin(admin.ModelAdmin):
    list_display = ("name", "tool_type", "status", "category", "tenant_id", "enabled", "version", "updated_at")
    list_filter = ("tool_type", "status", "category", "tenant_id", "enabled")
    search_fields = ("name", "description")
    readonly_fields = ("definition_hash", "embedding_model", "created_at", "updated_at", "version")
    list_per_page = 100
    fieldsets = (
        (None, {"fields": ("name", "description", "tool_type", "status", "enabled", "category", "tenant_id")}),
        ("Definition", {"fields": ("input_schema", "implementation", "handler_path", "status_message", "large_output")}),
        ("Surface", {"fields": ("domain", "replaced_by_model_capability", "parent_tool", "dependencies")}),
        ("Review", {"fields": ("created_by", "rejection_reason", "test_results", "definition_hash", "version")}),
        ("Lifecycle", {"fields": ("deleted_at", "embedding_model", "created_at", "updated_at")}),
    )


@admin.register(ToolExecutionLog)
class ToolExecutionLogAdmin(admin.ModelAdmin):
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
class ToolJobAdmin(admin.ModelAdmin):
    list_display = ("id", "tool_name", "job_type", "status", "progress_pct", "tenant_id", "created_at")
    list_filter = ("job_type", "status", "tenant_id")
    search_fields = ("id", "tool_name")
    readonly_fields = ("created_at", "updated_at")


@admin.register(ModelConfig)
class ModelConfigAdmin(admin.ModelAdmin):
    list_display = ("role", "provider", "model", "max_output_tokens", "is_active")
    list_filter = ("provider", "is_active")


@admin.register(SeedLog)
class SeedLogAdmin(admin.ModelAdmin):
    list_display = ("key", "pinned", "updated_at")
    search_fields = ("key",)

from registry.mcp import admin as _mcp_admin  # noqa: E402,F401  (registers My Connections and Marketplace)
