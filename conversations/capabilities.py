"""What a caller may do, from Django's permissions and groups."""

from __future__ import annotations

from typing import Any


def capabilities_for(user: Any) -> frozenset[str]:
    """Capability names of ``user``: ``app.codename`` permissions, ``group:NAME``, ``staff``.

    An anonymous or missing user has none.
    """
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    capabilities = set(user.get_all_permissions())
    capabilities.update(f"group:{name}" for name in user.groups.values_list("name", flat=True))
    if user.is_staff:
        capabilities.add("staff")
    return frozenset(capabilities)
