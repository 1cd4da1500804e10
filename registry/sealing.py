"""Secrets at rest: Fernet with a key derived from SECRET_KEY and a purpose.

Each purpose gets its own key, so a token sealed for one use cannot be
unsealed as another, and SECRET_KEY itself is never the encryption key.
"""

from __future__ import annotations

import base64
import functools
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


@functools.cache
def _fernet(purpose: bytes, secret_key: str) -> Fernet:
    digest = hashlib.sha256(purpose + b"\x00" + secret_key.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(secret: str, purpose: bytes) -> str:
    """``secret`` encrypted for ``purpose``; "" for an empty secret."""
    return _fernet(purpose, settings.SECRET_KEY).encrypt(secret.encode()).decode() if secret else ""


def unseal(token: str, purpose: bytes) -> str:
    """The sealed secret; "" when none is stored or SECRET_KEY changed since (it must be set again)."""
    if not token:
        return ""
    try:
        return _fernet(purpose, settings.SECRET_KEY).decrypt(token.encode()).decode()
    except InvalidToken:
        return ""
