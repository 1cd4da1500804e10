"""An HTTP client for one Streamable HTTP server: pinned to the checked address, no redirects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus

from registry.mcp.urls import PinnedURL

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0
CHALLENGE_CHARS = 300  # of a WWW-Authenticate header shown in an error


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


def pinned_client(pinned: PinnedURL, headers: Mapping[str, str] | None, refusal: HTTPRefusal | None = None):
    """An ``httpx2.AsyncClient`` that only ever talks to ``pinned.address``.

    The Host header and TLS server name stay the URL's host; a request for any
    other host is refused, and no redirect is followed (max_redirects=0).
    An error status is noted in ``refusal``, if given.
    """
    import httpx2

    class PinnedTransport(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self._inner = httpx2.AsyncHTTPTransport(trust_env=False)

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            if request.url.host.rstrip(".") != pinned.host:
                raise httpx2.ConnectError(f"refusing a request to {request.url.host}: not the configured host")
            request.url = request.url.copy_with(host=pinned.address)
            request.extensions = {**request.extensions, "sni_hostname": pinned.host}
            response = await self._inner.handle_async_request(request)
            if refusal is not None and response.status_code >= 400:
                refusal.record(response.status_code, response.headers.get("www-authenticate", ""))
            return response

        async def aclose(self) -> None:
            await self._inner.aclose()

    return httpx2.AsyncClient(
        transport=PinnedTransport(),
        headers=dict(headers or {}),
        timeout=httpx2.Timeout(CONNECT_TIMEOUT, read=READ_TIMEOUT),
        follow_redirects=False,
        max_redirects=0,
        trust_env=False,
    )
