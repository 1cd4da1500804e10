"""Datasource secrets at rest: Fernet with a key derived from SECRET_KEY."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


def _fernet() -> Fernet:
    # A purpose-bound key, so the SECRET_KEY itself is never the encryption key.
    digest = hashlib.sha256(b"eunice.datasource.secret\x00" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode() if secret else ""


def unseal(token: str) -> str:
    """The stored secret; "" when none is stored or SECRET_KEY changed since (it must be set again)."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        return ""
