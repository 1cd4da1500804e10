"""Who the caller of a data tool is: staff checks, and what of a conversation's is theirs.

A tool context names its caller by ``user_id``: the user's primary key (every
turn, REST call and websocket), or a username (``call_tool --user``).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Q


def is_staff(context: dict) -> bool:
    """Whether the caller behind ``context`` is an active staff member (by capability, pk or username)."""
    if "staff" in (context.get("capabilities") or ()):
        return True
    users = get_user_model().objects.filter(is_staff=True, is_active=True)
    return users.filter(caller_is(context, "")).exists()


def is_superuser(context: dict) -> bool:
    """Whether the caller behind ``context`` is an active superuser: the only role that
    sees past its tenant (registry.tenancy.tenant_scope)."""
    users = get_user_model().objects.filter(is_superuser=True, is_active=True)
    return users.filter(caller_is(context, "")).exists()


def caller_is(context: dict, prefix: str = "user__") -> Q:
    """A filter for rows whose user (reached through ``prefix``) is the caller behind
    ``context``; matches nothing when the context names no caller. A numeric id is
    only ever a primary key, never a username."""
    key = str(context.get("user_id") or "")
    if not key:
        return Q(pk__in=[])
    return Q(**{f"{prefix}pk": int(key)}) if key.isdigit() else Q(**{f"{prefix}username": key})


def readable_files(context: dict):  # noqa: ANN201 - a GeneratedFile QuerySet
    """The files the caller may read: those made in the conversation they are in, in
    their other conversations, and outside any conversation, in their tenant (staff:
    all of the tenant's)."""
    from conversations.models import GeneratedFile

    rows = GeneratedFile.objects.filter(tenant_id=context["tenant_id"])
    if is_staff(context):
        return rows
    theirs = Q(conversation__isnull=True) | caller_is(context, "conversation__user__")
    if context.get("conversation_id"):
        theirs |= Q(conversation_id=context["conversation_id"])
    return rows.filter(theirs)
