"""Which tenant a signed-in user acts for: registry.models.TenantMembership."""

from __future__ import annotations

from registry.models import TenantMembership


def tenant_of(user: object) -> str | None:
    """The user's tenant id, or None for a user with no membership (who sees nothing).

    Always read from the database, never from a cached relation: a long-lived
    websocket must notice a membership that changed since it connected.
    """
    if not getattr(user, "is_authenticated", False):
        return None
    return (
        TenantMembership.objects.filter(user_id=user.pk)  # type: ignore[attr-defined]
        .values_list("tenant_id", flat=True)
        .first()
    )
