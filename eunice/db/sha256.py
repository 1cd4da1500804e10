"""SHA-256 of a binary column, worked out by the database: ``Sha256("archive")``.

PostgreSQL has ``sha256(bytea)``; SQLite has no such function, so every SQLite
connection Django opens gets one (``eunice_sha256``, deterministic, registered by
``register``). A connection without it (the ``sqlite3`` shell) can still read and
delete the rows, but fails any insert or update of them: a stored column computed
with it never falls behind the bytes it is computed from.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db.backends.signals import connection_created
from django.db.models import BinaryField, Func

SQLITE_FUNCTION = "eunice_sha256"


class Sha256(Func):
    """The 32-byte SHA-256 digest of a binary expression (NULL for NULL)."""

    function = "sha256"
    arity = 1
    output_field = BinaryField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return super().as_sql(compiler, connection, function=SQLITE_FUNCTION, **extra)


def _sha256(data: bytes | None) -> bytes | None:
    return None if data is None else hashlib.sha256(data).digest()


def register(sender: Any, connection: Any, **kwargs: Any) -> None:
    """``connection_created`` receiver: gives a new SQLite connection ``eunice_sha256``."""
    if connection.vendor == "sqlite":
        connection.connection.create_function(SQLITE_FUNCTION, 1, _sha256, deterministic=True)


# Connected when the models that use it are imported, before any app's ready() can open a connection.
connection_created.connect(register, dispatch_uid="eunice.db.sha256")
