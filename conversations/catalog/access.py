"""Who the caller of a data tool is: staff checks for the tools that need them."""

from __future__ import annotations

from django.contrib.auth import get_user_model


def is_staff(context: dict) -> bool:
    """Whether the caller behind ``context`` is an active staff member (by capability, pk or username)."""
    if "staff" in (context.get("capabilities") or ()):
        return True
    key = str(context.get("user_id") or "")
    if not key:
        return False
    users = get_user_model().objects.filter(is_staff=True, is_active=True)
    return (key.isdigit() and users.filter(pk=int(key)).exists()) or users.filter(username=key).exists()
