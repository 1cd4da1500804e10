"""The marketplace: a bundled catalog of well-known servers plus an MCP registry search.

The registry is the official one's API (``GET {EUNICE_MCP_REGISTRY_URL}/v0/servers?search=…``)
at a configurable URL. When it is unreachable the search says so and still
answers from the bundled catalog. Installing shows the exact argv first; see
``install``.
"""

from __future__ import annotations

import shlex
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings

from eunice.jsonlimits import loads_bounded
from registry.mcp.services import Actor, connect_server, create_server

SEARCH_TIMEOUT = 5.0


@dataclass(frozen=True)
class Listing:
    id: str
    title: str
    description: str
    transport: str = "stdio"
    command: list[str] = field(default_factory=list)
    url: str = ""
    source: str = "bundled"

    @property
    def launch(self) -> str:
        """Exactly what will run (or be contacted): shown to staff before installing."""
        return shlex.join(self.command) if self.command else self.url

    def as_dict(self) -> dict:
        return {**asdict(self), "launch": self.launch}


BUNDLED: tuple[Listing, ...] = (
    Listing("time", "Time", "Current time and timezone conversion (mcp-server-time, PyPI).",
            command=[sys.executable, "-m", "mcp_server_time"]),
    Listing("fetch", "Fetch", "Fetch a URL and convert it to markdown (mcp-server-fetch).",
            command=["uvx", "mcp-server-fetch"]),
    Listing("git", "Git", "Read and search a local git repository (mcp-server-git).",
            command=["uvx", "mcp-server-git"]),
    Listing("filesystem", "Filesystem", "Read and write files under one directory.",
            command=["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"]),
    Listing("memory", "Memory", "A knowledge-graph memory kept across conversations.",
            command=["npx", "-y", "@modelcontextprotocol/server-memory"]),
    Listing("sequential-thinking", "Sequential thinking", "Structured step-by-step reasoning.",
            command=["npx", "-y", "@modelcontextprotocol/server-sequential-thinking"]),
)


@dataclass
class SearchResult:
    listings: list[Listing]
    registry_error: str = ""


def search(query: str, limit: int = 10) -> SearchResult:
    """Bundled matches first, then the registry's. Never raises for an unreachable registry."""
    words = query.lower().split()
    bundled = [entry for entry in BUNDLED if all(w in f"{entry.id} {entry.title} {entry.description}".lower() for w in words)]
    try:
        remote = _search_registry(query, limit)
        error = ""
    except (OSError, ValueError) as exc:
        remote, error = [], f"the MCP registry at {settings.MCP_REGISTRY_URL} is unreachable ({_reason(exc)})"
    return SearchResult((bundled + remote)[:limit], error)


def find(listing_id: str) -> Listing | None:
    """A bundled listing by id, or a registry one by its server name."""
    for entry in BUNDLED:
        if entry.id == listing_id:
            return entry
    try:
        return next((entry for entry in _search_registry(listing_id, 20) if entry.id == listing_id), None)
    except (OSError, ValueError):
        return None


def install(listing: Listing, *, acting_user: Actor, tenant_id: str, name: str) -> dict:
    """Create the server from a listing and connect it. Raises as the services do."""
    fields: dict[str, Any]
    if listing.transport == "stdio":
        fields = {"transport": "stdio", "command": listing.command[0], "args": listing.command[1:]}
    else:
        fields = {"transport": "streamable_http", "url": listing.url}
    server = create_server(acting_user=acting_user, tenant_id=tenant_id, name=name, **fields)
    return {"server": server.name, "launch": listing.launch, **connect_server(server, acting_user=acting_user)}


def _search_registry(query: str, limit: int) -> list[Listing]:
    url = f"{settings.MCP_REGISTRY_URL.rstrip('/')}/v0/servers?" + urllib.parse.urlencode(
        {"search": query, "limit": limit}
    )
    with urllib.request.urlopen(url, timeout=SEARCH_TIMEOUT) as response:  # noqa: S310 - configured URL
        body = loads_bounded(response.read(2_000_000), what="the registry's answer")
    return [listing for item in body.get("servers", []) if (listing := _listing(item)) is not None]


def _listing(item: dict) -> Listing | None:
    server = item.get("server", item)
    name, description = server.get("name"), server.get("description", "")
    if not name:
        return None
    for remote in server.get("remotes") or []:
        if remote.get("type") == "streamable-http" and remote.get("url"):
            return Listing(name, name, description, "streamable_http", url=remote["url"], source="registry")
    launchers = {"pypi": ["uvx"], "npm": ["npx", "-y"]}
    for package in server.get("packages") or []:
        launcher = launchers.get(package.get("registryType") or package.get("registry_type"))
        if launcher and package.get("identifier"):
            return Listing(name, name, description, command=[*launcher, package["identifier"]], source="registry")
    return None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return type(exc).__name__
