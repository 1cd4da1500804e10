"""The system tool catalog, as the registry sees it: a port the ``tools`` app installs.

The registry needs the catalog (which tools exist, which a flag turned off, which
sandboxed code may call) but must not import ``tools``: ``tools.apps`` installs
its catalog here when Django starts.
"""

from __future__ import annotations

from registry.installed import Port
from registry.ports import SystemCatalog

_catalog: Port[SystemCatalog] = Port("system tool catalog", "tools")
install = _catalog.install


def system_catalog() -> SystemCatalog:
    """The installed catalog. Raises ImproperlyConfigured before the tools app is ready."""
    return _catalog.get()
