"""SSRF checks for Streamable HTTP servers: which URLs we may connect to, and where.

A URL passes when it is http(s), its host is a name or a dotted-quad/IPv6
literal (no decimal, hex or octal address forms), and every address it
resolves to is public. The URL is resolved once here; the connection is then
pinned to that address (see ``registry.mcp.http``), so a DNS answer that
changes between the check and the connect cannot reach a private address.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from registry.mcp import MCPError

_DOTTED_QUAD = re.compile(r"^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$")
_NUMERIC_LOOKING = re.compile(r"^(0x[0-9a-f]+|\d+)(\.(0x[0-9a-f]+|\d+)){0,3}\.?$", re.IGNORECASE)


class UnsafeURL(MCPError):
    """A URL we refuse to connect to; the message says why."""


class PrivateAddress(UnsafeURL):
    """The URL is well formed, but its host is (or resolves to) an address we may not reach."""


class UnresolvableHost(UnsafeURL):
    """The URL is well formed, but its host name does not resolve."""


# What ``check_url`` accepts before it looks the host up, as a JSON Schema pattern
# (the API documents it): http or https, no credentials, a host name whose last
# label starts with a letter (so never a decimal, hex or octal address form) or a
# dotted quad, an optional port up to 65535. An IPv6 literal passes check_url but
# is left out here (its grammar is longer than it is worth in a schema).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = rf"(?:(?:{_LABEL}\.)*[A-Za-z](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?\.?|{_DOTTED_QUAD.pattern[1:-1]})"
_PORT = r"(?::(?:[0-5]?[0-9]{0,4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
HTTP_URL_PATTERN = rf"^\s*[Hh][Tt][Tt][Pp][Ss]?://{_HOST}{_PORT}(?:[/?#][^\u0000]*)?\s*$"


@dataclass(frozen=True, slots=True)
class PinnedURL:
    url: str
    scheme: str
    host: str
    port: int
    address: str  # the IP we connect to


def check_url(url: str, *, allow_private: bool = False) -> PinnedURL:
    """Validate ``url`` and resolve its host once. Raises UnsafeURL saying why not."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        raise UnsafeURL(f"only http and https URLs are allowed, not {parts.scheme or 'no scheme'!r}")
    if parts.username or parts.password:
        raise UnsafeURL("credentials in the URL are not allowed; use headers")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UnsafeURL("the URL has no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UnsafeURL("the URL's port is not a number between 0 and 65535") from None
    address = pinned_address(host, port, allow_private=allow_private)
    return PinnedURL(url=url.strip(), scheme=parts.scheme, host=host, port=port, address=address)


def pinned_address(host: str, port: int, *, allow_private: bool = False) -> str:
    """The one address to connect to for ``host``, resolved once here.

    The same rules for every outbound connection (MCP servers, fetch_url,
    datasources): a name or a dotted-quad/IPv6 literal, never a decimal, hex
    or octal form; unless ``allow_private``, every address the name resolves
    to must be public. Raises UnsafeURL saying why not.
    """
    literal = _literal_address(host)
    addresses = [literal] if literal else _resolve(host, port)
    if not allow_private:
        for address in addresses:
            reason = private_reason(address)
            if reason:
                raise PrivateAddress(f"{host} resolves to {address}, a {reason} address")
    return str(addresses[0])


def _literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.split("%")[0])
        except ValueError:
            raise UnsafeURL(f"{host!r} is not a valid IPv6 address") from None
    if _DOTTED_QUAD.match(host):
        return ipaddress.IPv4Address(host)
    if _NUMERIC_LOOKING.match(host):
        # 2130706433, 0x7f.1, 0177.0.0.1 … are all 127.0.0.1 to a resolver.
        raise UnsafeURL(f"{host!r} is a decimal, hex or octal address form; write a host name")
    return None


def _resolve(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnresolvableHost(f"cannot resolve {host!r}: {exc}") from None
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


def private_reason(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """Which kind of non-public address this is, or "" for a public one."""
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            return private_reason(mapped) and f"IPv4-mapped {private_reason(mapped)}"
        if address in _NAT64:
            # A NAT64 gateway forwards 64:ff9b::a.b.c.d to the IPv4 address
            # a.b.c.d, and Python counts the prefix as global: judge a.b.c.d.
            embedded = private_reason(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
            return embedded and f"NAT64-embedded {embedded}"
        if address in _NAT64_LOCAL:
            return "NAT64 local-use"  # RFC 8215: the IPv4 part may sit anywhere in it
        if address in ipaddress.IPv6Network("fc00::/7"):
            return "unique-local"
    checks = (
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("private", address.is_private),
        ("unspecified", address.is_unspecified),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("non-global", not address.is_global),
    )
    return next((name for name, hit in checks if hit), "")
