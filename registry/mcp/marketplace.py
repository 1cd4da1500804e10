"""The marketplace: a bundled catalog of well-known servers plus an MCP registry search.

The registry is the official one's API (``GET {EUNICE_MCP_REGISTRY_URL}/v0/servers?search=…``)
at a configurable URL. When it is unreachable the search says so and still
answers from the bundled catalog. Each listing says whether it can run on
this machine (``Listing.missing``: its launcher on PATH, its Python module
importable) and, if not, exactly what is missing. Installing from chat waits
for the person's click on what ``Listing.shown`` describes (tools.mcp).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shlex
import shutil
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings

from eunice.jsonlimits import loads_bounded
from registry.mcp.services import Actor, connect_server, create_server
from registry.models import ApprovalPolicy, MCPTransport

SEARCH_TIMEOUT = 5.0


@dataclass(frozen=True)
class Listing:
    id: str
    title: str
    description: str
    transport: str = MCPTransport.STDIO
    command: list[str] = field(default_factory=list)
    url: str = ""
    source: str = "bundled"
    package: str = ""  # what the launcher fetches or imports (npm, PyPI or module name)
    version: str = ""  # pinned in ``command`` when the registry names one

    @property
    def launch(self) -> str:
        """Exactly what will run (or be contacted): shown to staff before installing."""
        return shlex.join(self.command) if self.command else self.url

    def as_dict(self) -> dict:
        return {**asdict(self), "launch": self.launch, "missing": self.missing()}

    def missing(self) -> str:
        """What this machine lacks to run the listing ("" when it can run here)."""
        if self.transport != MCPTransport.STDIO:
            return ""
        program = self.command[0] if self.command else ""
        if program == sys.executable and self.command[1:2] == ["-m"]:
            module = self.command[2] if len(self.command) > 2 else ""
            if module and importlib.util.find_spec(module) is None:
                package = self.package or module
                return f"the Python package {package} is not installed here (pip install {package})"
            return ""
        if not shutil.which(program):
            return f"{program!r} is not on PATH here" + LAUNCHER_HELP.get(program, "")
        return ""

    def shown(self, name: str) -> dict:
        """What the person sees before approving an install of this listing, and
        what the install then runs: the command, package and version exactly."""
        return {
            "title": f"Install the MCP server {self.title!r} as {name!r}",
            "id": self.id,
            "name": name,
            "source": self.source,
            "transport": self.transport,
            "command": list(self.command),
            "url": self.url,
            "launch": self.launch,
            "package": self.package or "(none)",
            "version": self.version_shown(),
        }

    def version_shown(self) -> str:
        if self.version:
            return self.version
        if self.command[:1] == [sys.executable]:
            try:
                return f"{importlib.metadata.version(self.package)} (installed here)"
            except importlib.metadata.PackageNotFoundError:
                return "not installed"
        if self.transport == MCPTransport.STDIO:
            return "not pinned: the newest release when the server starts"
        return "whatever the remote server runs"

    @classmethod
    def from_shown(cls, shown: dict) -> Listing:
        """The listing an approved install runs: exactly what the person was shown."""
        return cls(
            shown["id"],
            shown["id"],
            "",
            shown["transport"],
            command=list(shown["command"]),
            url=shown["url"],
            source=shown["source"],
            package=shown["package"],
        )


LAUNCHER_HELP = {
    "uvx": " (uvx comes with uv: https://docs.astral.sh/uv/)",
    "npx": " (npx comes with Node.js: https://nodejs.org/)",
}


BUNDLED: tuple[Listing, ...] = (
    Listing(
        "time",
        "Time",
        "Current time and timezone conversion (mcp-server-time, PyPI).",
        command=[sys.executable, "-m", "mcp_server_time"],
        package="mcp-server-time",
    ),
    Listing(
        "fetch",
        "Fetch",
        "Fetch a URL and convert it to markdown (mcp-server-fetch).",
        command=["uvx", "mcp-server-fetch"],
        package="mcp-server-fetch",
    ),
    Listing(
        "git",
        "Git",
        "Read and search a local git repository (mcp-server-git).",
        command=["uvx", "mcp-server-git"],
        package="mcp-server-git",
    ),
    Listing(
        "filesystem",
        "Filesystem",
        "Read and write files under one directory.",
        command=["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"],
        package="@modelcontextprotocol/server-filesystem",
    ),
    Listing(
        "memory",
        "Memory",
        "A knowledge-graph memory kept across conversations.",
        command=["npx", "-y", "@modelcontextprotocol/server-memory"],
        package="@modelcontextprotocol/server-memory",
    ),
    Listing(
        "sequential-thinking",
        "Sequential thinking",
        "Structured step-by-step reasoning.",
        command=["npx", "-y", "@modelcontextprotocol/server-sequential-thinking"],
        package="@modelcontextprotocol/server-sequential-thinking",
    ),
)


@dataclass
class SearchResult:
    listings: list[Listing]
    registry_error: str = ""


def search(query: str, limit: int = 10) -> SearchResult:
    """Bundled matches first, then the registry's. Never raises for an unreachable registry."""
    words = query.lower().split()
    bundled = [
        entry for entry in BUNDLED if all(w in f"{entry.id} {entry.title} {entry.description}".lower() for w in words)
    ]
    try:
        remote = _search_registry(query, limit)
        error = ""
    except (OSError, ValueError) as exc:
        remote, error = [], f"the MCP registry at {settings.MCP_REGISTRY_URL} is unreachable ({_reason(exc)})"
    # What can run here first: it is what the user can actually have.
    found = sorted(bundled + remote, key=lambda entry: bool(entry.missing()))
    return SearchResult(found[:limit], error)


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
    """Create the server from a listing and connect it. Its new tools wait for
    staff review (the manual approval policy). Raises as the services do."""
    fields: dict[str, Any] = {"approval_policy": ApprovalPolicy.MANUAL}
    if listing.transport == MCPTransport.STDIO:
        fields |= {"transport": MCPTransport.STDIO, "command": listing.command[0], "args": listing.command[1:]}
    else:
        fields |= {"transport": MCPTransport.STREAMABLE_HTTP, "url": listing.url}
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
            return Listing(name, name, description, MCPTransport.STREAMABLE_HTTP, url=remote["url"], source="registry")
    launchers = {"pypi": ["uvx"], "npm": ["npx", "-y"]}
    for package in server.get("packages") or []:
        launcher = launchers.get(package.get("registryType") or package.get("registry_type"))
        identifier, version = package.get("identifier"), str(package.get("version") or "")
        if launcher and identifier:
            # Pinned when the registry names a version: the person approves one release, not "latest".
            spec = f"{identifier}@{version}" if version else identifier
            return Listing(
                name,
                name,
                description,
                command=[*launcher, spec],
                source="registry",
                package=identifier,
                version=version,
            )
    return None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return type(exc).__name__
