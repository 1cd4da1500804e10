"""Admin mixins for the tenant rule: superusers see every tenant, staff only their own.

``TenantScopedAdmin`` narrows an admin's list, change pages and deletes to the
rows of the user's tenant scope (``registry.tenancy.tenant_scope``); a row of
another tenant answers as one that does not exist. For staff the tenant field is
read-only (a new row gets their tenant), the tenant list filter is left out (its
choices would name every tenant), and a foreign key offers only rows of their
tenant. Rows that belong to no tenant (the model configuration, the seeding
log) use ``eunice.platform_admin.PlatformAdmin``: superusers only.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import ForeignKey, QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest

from registry.tenancy import in_scope, tenant_scope


class TenantScopedAdmin(admin.ModelAdmin):
    """A ModelAdmin whose rows are cut to the user's tenant scope (see the module docstring)."""

    # How a row reaches its tenant id: a field, or a lookup such as "conversation__tenant_id".
    tenant_field = "tenant_id"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return in_scope(super().get_queryset(request), request.user, self.tenant_field)

    def get_list_filter(self, request: HttpRequest) -> Any:
        filters = super().get_list_filter(request)
        if tenant_scope(request.user) is None:
            return filters
        return [f for f in filters if f != self.tenant_field]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = super().get_readonly_fields(request, obj)
        if tenant_scope(request.user) is None or "__" in self.tenant_field or self.tenant_field in fields:
            return fields
        return (*fields, self.tenant_field)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        scope = tenant_scope(request.user)
        if scope is not None and "__" not in self.tenant_field:
            setattr(obj, self.tenant_field, scope)  # staff never write a row into another tenant
        super().save_model(request, obj, form, change)

    def formfield_for_foreignkey(self, db_field: ForeignKey, request: HttpRequest, **kwargs: Any) -> ModelChoiceField:
        scope = tenant_scope(request.user)
        related = db_field.related_model
        if scope is not None and "queryset" not in kwargs:
            if related is get_user_model():
                kwargs["queryset"] = related.objects.filter(tenant_membership__tenant_id=scope)
            elif any(field.name == "tenant_id" for field in related._meta.get_fields()):
                kwargs["queryset"] = related.objects.filter(tenant_id=scope)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)
