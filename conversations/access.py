"""Who may see a conversation: its owner, within the owner's tenant."""

from __future__ import annotations

from typing import Any

from django.db.models import F

from conversations.models import Conversation
from registry.tenancy import tenant_of


def owned_conversation(user: Any, conversation_id: str) -> Conversation | None:
    """The conversation if ``user`` owns it in their current tenant; None otherwise (no hint why).

    One query, run for every websocket message: the user's membership is
    joined in (its tenant must be the conversation's) rather than read first.
    """
    if not getattr(user, "is_authenticated", False):
        return None
    # is_active and the membership from the tables, not the session's cached
    # user: a deactivated or moved account loses its open sockets on their
    # next message. The owner comes along, fresh from the table too: a
    # socket's turns take the user's current staff flag, groups and
    # permissions from it, not the ones they had when the socket opened.
    found = (
        Conversation.objects.select_related("user")
        .filter(pk=conversation_id, user=user, user__is_active=True, user__tenant_membership__tenant_id=F("tenant_id"))
        .live()
        .order_by()[:1]
    )
    return next(iter(found), None)


def conversations_of(user: Any, *, deleted: bool = False):
    """``user``'s conversations in their tenant: the live ones, or (``deleted``) those they deleted."""
    tenant = tenant_of(user)
    if tenant is None:
        return Conversation.objects.none()
    return Conversation.objects.filter(tenant_id=tenant, user=user, deleted_at__isnull=not deleted)
