"""Admin for the model configuration: rows of the platform, superusers only."""

from __future__ import annotations

from django.contrib import admin

from eunice.platform_admin import PlatformAdmin
from llm.models import ModelConfig


@admin.register(ModelConfig)
class ModelConfigAdmin(PlatformAdmin):
    list_display = ("role", "provider", "model", "max_output_tokens", "thinking_budget_tokens", "is_active")
    list_filter = ("provider", "is_active")
