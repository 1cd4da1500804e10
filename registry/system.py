"""The system tool catalog, as the registry sees it: a port the ``tools`` app installs.

The registry needs the catalog (which tools exist, which a flag turned off, which
sandboxed code may call) but must not import ``tools``: ``tools.apps`` installs
its catalog here when Django starts, and beside it the skill shelf (the tenant's
approved skills every model call names).
"""

from __future__ import annotations

from registry.installed import Port
from registry.ports import SkillShelf, SystemCatalog

_catalog: Port[SystemCatalog] = Port("system tool catalog", "tools")
install = _catalog.install
_skills: Port[SkillShelf] = Port("skill shelf", "tools")
install_skills = _skills.install


def system_catalog() -> SystemCatalog:
    """The installed catalog. Raises ImproperlyConfigured before the tools app is ready."""
    return _catalog.get()


def resident_skills(tenant_id: str, limit: int) -> list[tuple[str, str]]:
    """The tenant's usable skills (name, description) to keep resident; none when the
    tools app installed no shelf."""
    shelf = _skills.installed()
    return shelf.resident(tenant_id, limit) if shelf is not None else []
