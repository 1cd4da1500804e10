"""What a caller may do, from Django's permissions and groups."""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection

_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
# Backends that only refuse logins (django-axes' lockout) and grant no permission.
_GRANT_NOTHING = frozenset({"axes.backends.AxesStandaloneBackend"})


def capabilities_for(user: Any) -> frozenset[str]:
    """Capability names of ``user``: ``app.codename`` permissions, ``group:NAME``, ``staff``.

    An anonymous or missing user has none. Read once per turn, so a change
    of rights applies from the user's next message.
    """
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    if [name for name in settings.AUTHENTICATION_BACKENDS if name not in _GRANT_NOTHING] == [_MODEL_BACKEND]:
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
    kind = "inactive" if not user.is_active else "superuser" if user.is_superuser else "user"
    sql, placeholders = _statements()[kind]
    with connection.cursor() as cursor:
        cursor.execute(sql, [user.pk] * placeholders)
        return [name for (name,) in cursor.fetchall()]


@functools.cache
def _statements() -> dict[str, tuple[str, int]]:
    """The query's SQL for each kind of user, composed once from the models' tables,
    with how many times it takes the user's id.

    The ORM built the same query in 1.5 ms of CPU per turn, about 40 % of a
    turn's opening database work, all of it under the GIL while other answers
    streamed; the statement it built never changes. ``||`` concatenates on
    both SQLite and PostgreSQL. The tables and columns come from the models,
    so a custom user model works.
    """
    q = connection.ops.quote_name
    user_model = get_user_model()
    user_groups = user_model._meta.get_field("groups")
    user_permissions = user_model._meta.get_field("user_permissions")
    group_permissions = Group._meta.get_field("permissions")

    def column(table: str, name: str) -> str:
        return f"{q(table)}.{q(name)}"

    ug, up, gp = user_groups.m2m_db_table(), user_permissions.m2m_db_table(), group_permissions.m2m_db_table()
    group, permission = Group._meta.db_table, Permission._meta.db_table
    content_type_field = Permission._meta.get_field("content_type")
    content_type = content_type_field.related_model._meta.db_table
    content_type_pk = content_type_field.related_model._meta.pk.column
    groups = (
        f"SELECT 'group:' || {column(group, 'name')} FROM {q(group)}"
        f" JOIN {q(ug)} ON {column(ug, user_groups.m2m_reverse_name())} = {column(group, Group._meta.pk.column)}"
        f" WHERE {column(ug, user_groups.m2m_column_name())} = %s"
    )
    every_permission = (
        f"SELECT {column(content_type, 'app_label')} || '.' || {column(permission, 'codename')} FROM {q(permission)}"
        f" JOIN {q(content_type)} ON {column(content_type, content_type_pk)}"
        f" = {column(permission, content_type_field.column)}"
    )
    granted = (
        f"{every_permission} WHERE {column(permission, Permission._meta.pk.column)} IN ("
        f"SELECT {column(up, user_permissions.m2m_reverse_name())} FROM {q(up)}"
        f" WHERE {column(up, user_permissions.m2m_column_name())} = %s"
        f" UNION SELECT {column(gp, group_permissions.m2m_reverse_name())} FROM {q(gp)}"
        f" JOIN {q(ug)} ON {column(ug, user_groups.m2m_reverse_name())}"
        f" = {column(gp, group_permissions.m2m_column_name())}"
        f" WHERE {column(ug, user_groups.m2m_column_name())} = %s)"
    )
    statements = {
        "inactive": groups,
        "superuser": f"{every_permission} UNION {groups}",
        "user": f"{granted} UNION {groups}",
    }
    return {kind: (sql, sql.count("%s")) for kind, sql in statements.items()}
