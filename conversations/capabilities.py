"""What a caller may do, from Django's permissions and groups."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.db.models import Q, Value
from django.db.models.functions import Concat

_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def capabilities_for(user: Any) -> frozenset[str]:
    """Capability names of ``user``: ``app.codename`` permissions, ``group:NAME``, ``staff``.

    An anonymous or missing user has none. Read once per turn, so a change
    of rights applies from the user's next message.
    """
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    if list(settings.AUTHENTICATION_BACKENDS) == [_MODEL_BACKEND]:
        capabilities = set(_permissions_and_groups(user))
    else:  # another backend may grant permissions of its own: ask every backend
        capabilities = set(user.get_all_permissions())
        capabilities.update(f"group:{name}" for name in user.groups.values_list("name", flat=True))
    if user.is_staff:
        capabilities.add("staff")
    return frozenset(capabilities)


def _permissions_and_groups(user: Any) -> list[str]:
    """What Django's ModelBackend grants ``user``, and its groups as ``group:NAME``, in one query.

    Same rules as ``ModelBackend.get_all_permissions``: an inactive user has
    no permissions, a superuser has all of them. (Asking the backend costs
    two queries and the group names a third, on every turn.)
    """
    groups = Group.objects.filter(user=user).order_by().values_list(Concat(Value("group:"), "name"))
    if not user.is_active:
        return [name for (name,) in groups]
    permissions = Permission.objects.all() if user.is_superuser else Permission.objects.filter(
        Q(user=user) | Q(group__user=user)
    )
    permissions = permissions.order_by().values_list(Concat("content_type__app_label", Value("."), "codename"))
    return [name for (name,) in permissions.union(groups)]
