"""The system tool catalog, as the registry sees it: a port the ``tools`` app installs.

The registry needs the catalog (which tools exist, which a flag turned off, which
sandboxed code may call) but must not import ``tools``: ``tools.apps`` installs
its catalog here when Django starts.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from registry.ports import SystemCatalog

_installed: list[SystemCatalog] = []


def install(catalog: SystemCatalog) -> None:
    """Make ``catalog`` the deployment's system catalog (the tools app does, when ready)."""
    _installed[:] = [catalog]


def system_catalog() -> SystemCatalog:
    """The installed catalog. Raises ImproperlyConfigured before the tools app is ready."""
    if not _installed:
        raise ImproperlyConfigured("no system tool catalog is installed (is 'tools' in INSTALLED_APPS?)")
    return _installed[0]
