"""An HTTP client for one Streamable HTTP server: pinned to the checked address, no redirects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from registry.mcp import MCPError
from registry.mcp.urls import PinnedURL

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0
CHALLENGE_CHARS = 300
AUTH_FLOW_REQUESTS = 30  # at most, in one OAuth flow  # of a WWW-Authenticate header shown in an error


@dataclass
class HTTPRefusal:
    """The last error status the server answered with: the SDK reports only
    "Server returned an error response", which does not say 401 from 500."""

    status: int = 0
    challenge: str = ""

    def record(self, status: int, challenge: str) -> None:
        self.status, self.challenge = status, challenge[:CHALLENGE_CHARS]

    def describe(self) -> str:
        """What went wrong, in words: the status, and whether the server wants authorization."""
        if not self.status:
            return ""
        try:
            phrase = HTTPStatus(self.status).phrase
        except ValueError:
            phrase = "error"
        text = f"the server answered HTTP {self.status} {phrase}"
        if self.status == 401 or self.challenge:
            wants = f" (WWW-Authenticate: {self.challenge})" if self.challenge else ""
            text += f"; it wants authorization{wants}: set the Authorization header in the server's headers"
        elif self.status == 403:
            text += "; the credentials in the server's headers are not allowed this"
        return text


def pinned_client(
    pinned: PinnedURL,
    headers: Mapping[str, str] | None,
    refusal: HTTPRefusal | None = None,
    *,
    auth: Any = None,
    elsewhere: bool = False,
    allow_private: bool = False,
):
    """An ``httpx2.AsyncClient`` that only ever talks to ``pinned.address``.

    The Host header and TLS server name stay the URL's host; a request for any
    other host is refused, and no redirect is followed (max_redirects=0).
    An error status is noted in ``refusal``, if given.

    With ``elsewhere`` (an OAuth connection: its authorization server may live on
    another host) a request for another host is checked as the server's URL was
    (``check_url``: public addresses only unless ``allow_private``) and pinned to
    the address that check resolved. ``auth`` is the client's httpx2 auth (the
    OAuth provider).
    """
    import asyncio

    import httpx2

    from registry.mcp.urls import check_url

    class PinnedTransport(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self._inner = httpx2.AsyncHTTPTransport(trust_env=False)

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            host, address = pinned.host, pinned.address
            if request.url.host.rstrip(".") != pinned.host:
                if not elsewhere:
                    raise httpx2.ConnectError(f"refusing a request to {request.url.host}: not the configured host")
                try:
                    checked = await asyncio.to_thread(check_url, str(request.url), allow_private=allow_private)
                except MCPError as exc:
                    raise httpx2.ConnectError(f"refusing a request to {request.url.host}: {exc}") from None
                host, address = checked.host, checked.address
            request.url = request.url.copy_with(host=address)
            request.extensions = {**request.extensions, "sni_hostname": host}
            response = await self._inner.handle_async_request(request)
            if refusal is not None and response.status_code >= 400:
                refusal.record(response.status_code, response.headers.get("www-authenticate", ""))
            return response

        async def aclose(self) -> None:
            await self._inner.aclose()

    return httpx2.AsyncClient(
        transport=PinnedTransport(),
        auth=auth,
        headers=dict(headers or {}),
        timeout=httpx2.Timeout(CONNECT_TIMEOUT, read=READ_TIMEOUT),
        follow_redirects=False,
        # httpx counts an auth flow's own requests (discovery, registration, token) as
        # redirects: room for them; no redirect is followed either way.
        max_redirects=AUTH_FLOW_REQUESTS if auth is not None else 0,
        trust_env=False,
    )
