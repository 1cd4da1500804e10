"""Which tenant a signed-in user acts for: registry.models.TenantMembership."""

from __future__ import annotations

from typing import TypeVar

from django.db.models import QuerySet

from registry.models import TenantMembership

# A queryset keeps its own class (and its methods) through in_scope.
Rows = TypeVar("Rows", bound=QuerySet)


def tenant_of(user: object) -> str | None:
    """The user's tenant id, or None for a user with no membership (who sees nothing).

    Always read from the database, never from a cached relation: a long-lived
    websocket must notice a membership that changed since it connected.
    """
    pk = getattr(user, "pk", None)
    if not getattr(user, "is_authenticated", False) or pk is None:
        return None
    return TenantMembership.objects.filter(user_id=pk).values_list("tenant_id", flat=True).first()


def tenant_scope(user: object) -> str | None:
    """The tenant whose rows ``user`` may see on staff pages and in the admin: None for an
    active superuser (every tenant: the platform's operators), else the user's own
    tenant ("" without a membership, which matches no row). Staff are never wider
    than their tenant."""
    if getattr(user, "is_superuser", False) and getattr(user, "is_active", False):
        return None
    return tenant_of(user) or ""


def in_scope(queryset: Rows, user: object, field: str = "tenant_id") -> Rows:
    """``queryset`` cut to the rows of ``user``'s tenant scope, the tenant read through ``field``."""
    scope = tenant_scope(user)
    return queryset if scope is None else queryset.filter(**{field: scope})


def acting_tenants(scope: str | None, limit: int = 200) -> list[str]:
    """The tenants a user of ``scope`` (``tenant_scope``'s answer) may run a tool for on the
    staff pages: staff, only their own (none without a membership); an active superuser,
    every tenant a user acts for."""
    if scope is not None:
        return [scope] if scope else []
    return TenantMembership.objects.tenant_ids(limit)
