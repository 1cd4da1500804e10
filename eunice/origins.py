"""The websocket Origin check, with the rule Django's CSRF middleware applies to HTTP.

Channels' ``AllowedHostsOriginValidator`` compares only the Origin's host name
with ``ALLOWED_HOSTS``: scheme and port are ignored, so a page served from
``http://localhost:9999`` (any local process) could open a socket on a server at
``http://127.0.0.1:8000`` with the user's cookies. Here an Origin is accepted
exactly when ``CsrfViewMiddleware`` would accept it on an HTTP request to the
same host: the whole ``scheme://host[:port]`` equals the socket's own origin (its
Host header, itself valid for ``ALLOWED_HOSTS``), or it is one of
``CSRF_TRUSTED_ORIGINS`` (``*.`` wildcards for subdomains, same scheme and port).
A socket without an Origin header is refused, as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

Scope = dict
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]


def websocket_origin_allowed(scope: Scope) -> bool:
    """Whether the websocket ``scope``'s Origin header is one Django's CSRF check would accept."""
    headers = _headers(scope)
    try:
        origin = headers[b"origin"].decode("ascii")
    except (KeyError, UnicodeDecodeError):
        return False
    return _origin_allowed(scope, headers, origin)


def http_host_and_origin_allowed(scope: Scope) -> bool:
    """Whether an HTTP ``scope`` names a host of ``ALLOWED_HOSTS`` and, when it sends an
    Origin (a browser does; a desktop client need not), one the websocket rule accepts.
    The MCP endpoint's defence against DNS rebinding: a page on ``evil.example`` that
    resolves to 127.0.0.1 sends that name as its Host and Origin, and is refused."""
    headers = _headers(scope)
    if _valid_host(scope, headers, _is_secure(scope, headers)) is None:
        return False
    if b"origin" not in headers:
        return True
    try:
        origin = headers[b"origin"].decode("ascii")
    except UnicodeDecodeError:
        return False
    return _origin_allowed(scope, headers, origin)


def _origin_allowed(scope: Scope, headers: dict[bytes, bytes], origin: str) -> bool:
    secure = _is_secure(scope, headers)
    host = _valid_host(scope, headers, secure)
    if host is not None and origin == f"{'https' if secure else 'http'}://{host}":
        return True
    trusted = settings.CSRF_TRUSTED_ORIGINS
    if origin in {entry for entry in trusted if "*" not in entry}:
        return True
    try:
        parsed = urlsplit(origin)
    except ValueError:
        return False
    wildcards = [urlsplit(entry) for entry in trusted if "*" in entry]
    return any(
        entry.scheme == parsed.scheme and is_same_domain(parsed.netloc, entry.netloc.lstrip("*")) for entry in wildcards
    )


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """The scope's headers by lower-case name, repeated ones joined by commas (as Django's ASGIRequest)."""
    joined: dict[bytes, bytes] = {}
    for name, value in scope.get("headers") or ():
        key = name.lower()
        joined[key] = joined[key] + b"," + value if key in joined else value
    return joined


def _is_secure(scope: Scope, headers: dict[bytes, bytes]) -> bool:
    """``HttpRequest.is_secure``: the proxy's header when SECURE_PROXY_SSL_HEADER names one, else the scheme."""
    if settings.SECURE_PROXY_SSL_HEADER:
        meta_name, secure_value = settings.SECURE_PROXY_SSL_HEADER
        header = meta_name.removeprefix("HTTP_").replace("_", "-").lower().encode()
        if header in headers:
            return headers[header].decode("latin1").split(",", 1)[0].strip() == secure_value
    return scope.get("scheme") in ("wss", "https")


def _valid_host(scope: Scope, headers: dict[bytes, bytes], secure: bool) -> str | None:
    """The socket's host as ``HttpRequest.get_host`` finds it, or None where that raises DisallowedHost."""
    raw = headers.get(b"x-forwarded-host") if settings.USE_X_FORWARDED_HOST else None
    raw = raw or headers.get(b"host")
    if raw is not None:
        try:
            host = raw.decode("latin1")
        except UnicodeDecodeError:  # pragma: no cover - latin1 decodes every byte
            return None
    else:
        server_name, server_port = scope.get("server") or ("unknown", "0")
        host = str(server_name)
        if str(server_port) != ("443" if secure else "80"):
            host = f"{host}:{server_port}"
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    domain, _port = split_domain_port(host)
    return host if domain and validate_host(domain, allowed) else None


class CsrfOriginValidator:
    """ASGI middleware: a websocket whose Origin fails ``websocket_origin_allowed`` is closed
    before it is accepted (HTTP 403 in the handshake); other scopes pass untouched."""

    def __init__(self, application: ASGIApp) -> None:
        self.application = application

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] == "websocket" and not websocket_origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
