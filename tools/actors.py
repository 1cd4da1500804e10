"""Who is calling a tool: the acting user behind a context's user_id."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from registry.context import ToolContext


def active_user(user_id: object) -> Any | None:
    """The active user whose primary key or username is ``user_id``, or None."""
    if not user_id:
        return None
    users = get_user_model().objects.filter(is_active=True)
    key = str(user_id)
    return (users.filter(pk=int(key)).first() if key.isdigit() else None) or users.filter(username=key).first()


def staff_user(user_id: object) -> Any | None:
    """``active_user`` when they are staff, else None."""
    user = active_user(user_id)
    return user if user is not None and user.is_staff else None


def may(context: ToolContext, permission: str) -> bool:
    """Whether the caller is staff or holds ``permission`` ("app.codename").

    A conversation passes the user's capabilities in the context; other callers
    (the CLI, a custom tool's call_tool) are looked up by user_id.
    """
    capabilities = context.capabilities
    if capabilities:
        return "staff" in capabilities or permission in capabilities
    user = active_user(context.user_id)
    return user is not None and (user.is_staff or user.has_perm(permission))
