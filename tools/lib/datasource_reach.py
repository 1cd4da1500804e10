"""What a registered datasource may reach, checked at registration and at every connect.

- Never the app's own database. A PostgreSQL datasource is refused before
  connecting when its pinned address, port and database name are those of a
  database in ``DATABASES`` (any address of this machine counts as the local
  server's), and after connecting when the server's system identifier and
  database name, or the address and port it took the connection on, are the
  app's, whatever alias, port or proxy led there. A file is refused when it
  is the app's SQLite file (or its journal), by inode, so a link under
  another name is caught.
- Loopback, private and link-local hosts only when
  ``EUNICE_DATASOURCE_ALLOW_PRIVATE`` is on. The host is resolved once by the
  same helper as fetch_url and MCP (``registry.mcp.urls.pinned_address``) and
  the connection goes to that address (libpq ``hostaddr``), so a DNS answer
  that changes afterwards cannot move it.
- No role that reads or runs things on the database server (a superuser,
  ``pg_read_server_files``, ``pg_write_server_files``,
  ``pg_execute_server_program``): such a role reads any file the server can,
  the app's database files included.
- No file outside the tenant's own folders, symlinks resolved.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from eunice.tenant_files import is_tenant_file
from registry.mcp.urls import UnsafeURL, pinned_address

_POSTGRES_ENGINES = ("postgresql", "postgis")
_SQLITE_SIDE_FILES = ("", "-wal", "-shm", "-journal")
# libpq reads a dbname holding "=" or a URI as a whole connection string.
_CONNINFO_LIKE = re.compile(r"=|^postgres(ql)?:", re.IGNORECASE)

# After connecting: which server and database answered (the address and port it took the
# connection on, which a port forward or a proxy does not change), may this role read the
# server's files, and may it read the server's identifier? (pg_control_system() is checked
# for EXECUTE when a statement starts, even in a CASE branch, hence a second statement.)
_WHO_ANSWERED_SQL = (
    "SELECT current_database(), host(inet_server_addr()), inet_server_port(), "
    "current_setting('is_superuser') = 'on' OR pg_has_role('pg_read_server_files', 'MEMBER') "
    "OR pg_has_role('pg_write_server_files', 'MEMBER') OR pg_has_role('pg_execute_server_program', 'MEMBER'), "
    "has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE')"
)
_SERVER_ID_SQL = "SELECT system_identifier::text FROM pg_catalog.pg_control_system()"


class SourceRefused(Exception):
    """The datasource would reach what no datasource may; the message names the rule."""


@dataclass(frozen=True, slots=True)
class PostgresTarget:
    host: str
    address: str  # the one IP the connection goes to
    port: int
    database: str
    user: str


def postgres_target(location: dict) -> PostgresTarget:
    """Check a PostgreSQL location and pin its host to one address. Raises SourceRefused."""
    host = str(location.get("host") or "").strip().rstrip(".")
    database, user = str(location.get("database") or ""), str(location.get("user") or "")
    if not host or host.startswith("/") or "," in host:
        raise SourceRefused("host must be one host name or IP address (not a socket directory or a list)")
    for field, value in (("database", database), ("user", user)):
        if _CONNINFO_LIKE.search(value):
            raise SourceRefused(f"{field} must be a plain name, not a connection string")
    try:
        port = int(location.get("port") or 5432)
    except (TypeError, ValueError):
        raise SourceRefused("port must be a number between 1 and 65535") from None
    if not 0 < port < 65536:
        raise SourceRefused("port must be a number between 1 and 65535")
    try:
        address = pinned_address(host.strip("[]"), port, allow_private=settings.DATA["DATASOURCE_ALLOW_PRIVATE"])
    except UnsafeURL as exc:
        private = "resolves to" in str(exc)
        raise SourceRefused(
            f"{exc}{' (private hosts need EUNICE_DATASOURCE_ALLOW_PRIVATE)' if private else ''}"
        ) from None
    if _is_app_postgres(address, port, database):
        raise SourceRefused(f"{host}:{port}/{database} is the app's own database")
    return PostgresTarget(host=host.strip("[]"), address=address, port=port, database=database, user=user)


def check_connected(connection: Any) -> None:
    """Judge a fresh datasource connection (psycopg) by who answered it. Raises SourceRefused."""
    database, server_address, server_port, reads_server_files, may_identify = connection.execute(
        _WHO_ANSWERED_SQL
    ).fetchone()
    if server_address is not None and _is_app_postgres(server_address, int(server_port or 0), database):
        raise SourceRefused("the server answering is the app's own database")
    if may_identify:
        (system_identifier,) = connection.execute(_SERVER_ID_SQL).fetchone()
        if (system_identifier, database) in _app_identities():
            raise SourceRefused("the server answering is the app's own database")
    if reads_server_files:
        raise SourceRefused(
            "the datasource's role can read the database server's files (a superuser or a "
            "member of pg_read_server_files); register a role that may only SELECT"
        )


def tenant_file(tenant_id: str, path: str) -> Path:
    """The real path of ``path`` when it is a file in one of the tenant's folders and not the
    app's database. A relative path is taken inside the tenant's uploads. Raises SourceRefused."""
    from eunice.tenant_files import uploads_dir

    given = Path(path)
    if not given.is_absolute():
        given = uploads_dir(tenant_id) / given
    if not is_tenant_file(tenant_id, str(given)):
        # One answer for "outside" and "missing" alike: no probing the server's disk.
        raise SourceRefused(f"path: {path!r} is not a file in this tenant's uploads or files")
    real = given.resolve(strict=True)
    if any(_same_file(real, app_file) for app_file in _app_sqlite_files()):
        raise SourceRefused(f"path: {path!r} is the app's own database")
    return real


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _app_sqlite_files() -> list[Path]:
    names = [str(db.get("NAME") or "") for db in settings.DATABASES.values() if "sqlite" in db.get("ENGINE", "")]
    return [
        Path(name + side)
        for name in names
        if name and not name.startswith("file:") and name != ":memory:"
        for side in _SQLITE_SIDE_FILES
    ]


def _is_app_postgres(address: str, port: int, database: str) -> bool:
    """Whether ``address:port/database`` is a PostgreSQL database of ``DATABASES``."""
    for db in settings.DATABASES.values():
        if not any(engine in db.get("ENGINE", "") for engine in _POSTGRES_ENGINES):
            continue
        if database != db.get("NAME") or port != int(db.get("PORT") or 5432):
            continue
        host = str(db.get("HOST") or "")
        app_addresses = {"local"} if not host or host.startswith("/") else _addresses_of(host, port)
        if _normal(address) in app_addresses or ("local" in app_addresses and _is_local(address)):
            return True
    return False


@functools.lru_cache(maxsize=16)
def _addresses_of(host: str, port: int) -> frozenset[str]:
    """Every address of the app's database host; "local" when one of them is this machine."""
    try:
        found = {_normal(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)}
    except (socket.gaierror, UnicodeError):
        found = {host}
    return frozenset(found | ({"local"} if any(_is_local(a) for a in found) else set()))


def _normal(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def _is_local(address: str) -> bool:
    """Whether a connection to ``address`` stays on this machine (loopback, 0.0.0.0, any own address)."""
    try:
        ip = ipaddress.ip_address(_normal(address))
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified or str(ip) in _own_addresses()


@functools.cache
def _own_addresses() -> frozenset[str]:
    """The addresses of this machine's interfaces (Linux /proc), and what its host name resolves to."""
    found: set[str] = set()
    try:
        lines = Path("/proc/net/fib_trie").read_text().splitlines()
        found |= {lines[i - 1].split()[-1] for i, line in enumerate(lines) if "/32 host LOCAL" in line}
    except OSError:
        pass
    try:
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            found.add(str(ipaddress.IPv6Address(int(line.split()[0], 16))))
    except (OSError, ValueError, IndexError):
        pass
    for name in {socket.gethostname(), socket.getfqdn()}:
        try:
            found |= {_normal(info[4][0]) for info in socket.getaddrinfo(name, None)}
        except (socket.gaierror, UnicodeError):
            pass
    return frozenset(found)


def _app_identities() -> set[tuple[str, str]]:
    """(system identifier, database name) of every PostgreSQL database the app uses."""
    from django.db import connections

    identities = set()
    for alias in connections:
        connection = connections[alias]
        if connection.vendor == "postgresql":
            identity = _identity_of(alias, str(connection.settings_dict.get("NAME")))
            if identity[0] is not None:
                identities.add(identity)
    return identities


@functools.lru_cache(maxsize=16)
def _identity_of(alias: str, name: str) -> tuple[str | None, str]:
    """Read once per database: a server's identifier does not change while it runs."""
    from django.db import connections

    with connections[alias].cursor() as cursor:
        cursor.execute(_WHO_ANSWERED_SQL)
        database, *_, may_identify = cursor.fetchone()
        if not may_identify:
            return None, database
        cursor.execute(_SERVER_ID_SQL)
        return cursor.fetchone()[0], database
