"""Datasource secrets at rest, sealed by registry.sealing for their own purpose."""

from __future__ import annotations

from registry import sealing

_PURPOSE = b"eunice.datasource.secret"


def seal(secret: str) -> str:
    return sealing.seal(secret, _PURPOSE)


def unseal(token: str) -> str:
    """The stored secret; "" when none is stored or SECRET_KEY changed since (it must be set again)."""
    return sealing.unseal(token, _PURPOSE)
