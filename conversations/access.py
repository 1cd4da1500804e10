"""Who may see a conversation: its owner, within the owner's tenant."""

from __future__ import annotations

from typing import Any

from conversations.models import Conversation
from registry.tenancy import tenant_of


def owned_conversation(user: Any, conversation_id: str) -> Conversation | None:
    """The conversation if ``user`` owns it in their current tenant; None otherwise (no hint why)."""
    tenant = tenant_of(user)
    if tenant is None:
        return None
    # is_active from the table, not the session's cached user: a deactivated
    # account loses its open sockets on their next message. The owner comes
    # along, fresh from the table too: a socket's turns take the user's
    # current staff flag, groups and permissions from it, not the ones they
    # had when the socket opened.
    return (
        Conversation.objects.select_related("user")
        .filter(pk=conversation_id, tenant_id=tenant, user=user, user__is_active=True)
        .first()
    )


def conversations_of(user: Any):
    tenant = tenant_of(user)
    if tenant is None:
        return Conversation.objects.none()
    return Conversation.objects.filter(tenant_id=tenant, user=user)
