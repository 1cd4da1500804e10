"""An HTTP client for one Streamable HTTP server: pinned to the checked address, no redirects."""

from __future__ import annotations

from collections.abc import Mapping

from registry.mcp.urls import PinnedURL

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0


def pinned_client(pinned: PinnedURL, headers: Mapping[str, str] | None):
    """An ``httpx2.AsyncClient`` that only ever talks to ``pinned.address``.

    The Host header and TLS server name stay the URL's host; a request for any
    other host is refused, and no redirect is followed (max_redirects=0).
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
            return await self._inner.handle_async_request(request)

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
