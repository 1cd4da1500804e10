"""Which tenant a signed-in user acts for: registry.models.TenantMembership."""

from __future__ import annotations

from registry.models import TenantMembership


def tenant_of(user: object) -> str | None:
    """The user's tenant id, or None for a user with no membership (who sees nothing)."""
    if not getattr(user, "is_authenticated", False):
        return None
    try:
        return user.tenant_membership.tenant_id  # type: ignore[attr-defined]
    except TenantMembership.DoesNotExist:
        return None
