from django.contrib import admin

from conversations.models import (
    ChatMessage,
    Conversation,
    ConversationEvent,
    Notification,
    Observation,
    PolicyRule,
    UsageLog,
)
from datacatalog.models import GeneratedFile
from registry.admin_scope import TenantScopedAdmin


class ReadOnlyAdmin(TenantScopedAdmin):
    """Records written by the platform: staff read their tenant's, nobody edits them."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Conversation)
class ConversationAdmin(TenantScopedAdmin):
    list_display = ("id", "title", "tenant_id", "user", "mode", "updated_at")
    list_filter = ("mode", "tenant_id")
    search_fields = ("id", "title")
    readonly_fields = ("failed_approaches", "plan", "cancel_requested_at", "created_at", "updated_at")


@admin.register(ConversationEvent)
class ConversationEventAdmin(ReadOnlyAdmin):
    tenant_field = "conversation__tenant_id"
    list_display = ("conversation", "turn", "sequence", "event_type", "created_at")
    list_filter = ("event_type",)
    search_fields = ("conversation__id",)
    list_select_related = ("conversation",)


@admin.register(ChatMessage)
class ChatMessageAdmin(ReadOnlyAdmin):
    list_display = ("conversation", "role", "created_at", "cost_usd")
    list_filter = ("role",)
    list_select_related = ("conversation",)


@admin.register(PolicyRule)
class PolicyRuleAdmin(TenantScopedAdmin):
    list_display = ("name", "tool_name", "kind", "parameter", "action", "tenant_id", "enabled")
    list_filter = ("kind", "action", "enabled", "tenant_id")
    search_fields = ("name", "tool_name")


@admin.register(UsageLog)
class UsageLogAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "tenant_id", "kind", "name", "cost_usd", "input_tokens", "output_tokens")
    list_filter = ("kind", "tenant_id")


admin.site.register(GeneratedFile, ReadOnlyAdmin)
admin.site.register(Notification, ReadOnlyAdmin)


@admin.register(Observation)
class ObservationAdmin(ReadOnlyAdmin):
    """What was observed of how each person works: staff read their tenant's."""

    list_display = ("user_id", "kind", "key", "count", "updated_at", "tenant_id")
    list_filter = ("kind", "tenant_id")
    search_fields = ("user_id", "key", "text")
    ordering = ("-updated_at",)
