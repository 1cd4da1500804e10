"""The admin for rows of the platform, not of a tenant (the model configuration,
the seeding log): only superusers see or change them. Every app may use it."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class PlatformAdmin(admin.ModelAdmin):
    """Rows of the platform, not of a tenant: only superusers see or change them."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)
