"""A port an outer app installs when Django starts: how registry code calls outward.

``registry`` must not import the apps above it; where it needs one of them (the
system catalog of ``tools``, the working sets and datasets of ``conversations``),
it declares a Protocol and a ``Port`` here, and that app's ``AppConfig.ready``
installs the implementation.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from django.core.exceptions import ImproperlyConfigured

T = TypeVar("T")


class Port(Generic[T]):
    """One installed implementation of a Protocol, read at each use."""

    __slots__ = ("what", "installer", "_impl")

    def __init__(self, what: str, installer: str) -> None:
        self.what, self.installer = what, installer
        self._impl: T | None = None

    def install(self, impl: T) -> None:
        self._impl = impl

    def installed(self) -> T | None:
        """The installed implementation, or None when its app installed none."""
        return self._impl

    def get(self) -> T:
        """The installed implementation. Raises ImproperlyConfigured before its app is ready."""
        if self._impl is None:
            raise ImproperlyConfigured(f"no {self.what} is installed (is {self.installer!r} in INSTALLED_APPS?)")
        return self._impl
