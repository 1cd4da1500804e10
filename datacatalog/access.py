"""Who the caller of a tool is: staff checks, and what of a tenant's files and documents is theirs.

A tool context names its caller by ``user_id``: the user's primary key (every
turn, REST call and websocket), or a username (``call_tool --user``).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from registry.context import ToolContext


def is_staff(context: ToolContext) -> bool:
    """Whether the caller behind ``context`` is an active staff member (by capability, pk or username).

    Never for a call made by sandboxed code (registry.sandbox.bridge): a custom tool run
    by a staff member acts with the user's identity, not with staff rights.
    """
    if context.sandbox is not None:
        return False
    if "staff" in (context.capabilities or ()):
        return True
    users = get_user_model().objects.filter(is_staff=True, is_active=True)
    return users.filter(caller_is(context, "")).exists()


def is_superuser(context: ToolContext) -> bool:
    """Whether the caller behind ``context`` is an active superuser: the only role that
    sees past its tenant (registry.tenancy.tenant_scope)."""
    users = get_user_model().objects.filter(is_superuser=True, is_active=True)
    return users.filter(caller_is(context, "")).exists()


def caller_is(context: ToolContext, prefix: str = "user__") -> Q:
    """A filter for rows whose user (reached through ``prefix``) is the caller behind
    ``context``; matches nothing when the context names no caller. A numeric id is
    only ever a primary key, never a username."""
    key = str(context.user_id or "")
    if not key:
        return Q(pk__in=[])
    return Q(**{f"{prefix}pk": int(key)}) if key.isdigit() else Q(**{f"{prefix}username": key})


def caller_user(context: ToolContext):  # noqa: ANN201 - a User or None
    """The user behind ``context`` (None when it names none, or one that does not exist)."""
    if not context.user_id:
        return None
    return get_user_model().objects.filter(caller_is(context, "")).first()


def owned_rows(rows: QuerySet, context: ToolContext, *owners: str, also: Q | None = None) -> QuerySet:
    """The one ownership rule for uploads, files and documents.

    ``rows`` (already cut to the caller's tenant) that the caller may see: every one for
    staff of the tenant; for anyone else, those whose ``owners`` relations (user foreign
    keys, e.g. ``"user"`` or ``"conversation__user"``) name the caller, those that no
    owner relation claims (made outside any conversation by no user: the tenant's), and
    those matching ``also``.
    """
    if is_staff(context):
        return rows
    theirs = Q(pk__in=[])
    unclaimed = Q()
    for owner in owners:
        theirs |= caller_is(context, f"{owner}__")
        unclaimed &= Q(**{f"{owner}__isnull": True})
    return rows.filter(theirs | unclaimed | (also or Q(pk__in=[])))


def readable_files(context: ToolContext) -> QuerySet:
    """The files the caller may read (``owned_rows``): their uploads, files made in the
    conversation they are in or in their other conversations, and the tenant's files
    (made outside any conversation by no user); staff: all of the tenant's."""
    from datacatalog.models import GeneratedFile

    rows = GeneratedFile.objects.filter(tenant_id=context.tenant_id)
    here = Q(conversation_id=context.conversation_id) if context.conversation_id else None
    return owned_rows(rows, context, "user", "conversation__user", also=here)


def own_uploads(context: ToolContext) -> QuerySet:
    """The documents the caller uploaded (their names are theirs: a colleague's upload of the
    same name is another file), newest first; a subset of ``readable_files``."""
    from datacatalog.files import UPLOAD_TOOL

    return readable_files(context).filter(caller_is(context, "user__"), source_tool=UPLOAD_TOOL).order_by("-created_at")


def upload_names(context: ToolContext) -> list[str]:
    """What ``{"upload": NAME}`` may name for the caller: their uploads and the tenant's folder."""
    from eunice.tenant_files import list_uploads

    return sorted({*own_uploads(context).values_list("filename", flat=True), *list_uploads(context.tenant_id)})
