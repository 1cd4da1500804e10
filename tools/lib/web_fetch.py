"""Fetch one public web page under the MCP SSRF rules, following redirects by hand.

Every hop is checked by ``registry.mcp.urls.check_url`` (http/https only; no
private, loopback, link-local, unique-local, mapped or numeric-encoded
addresses) and the connection is pinned to the address that check resolved
(``registry.mcp.http.pinned_client``), so a DNS answer that changes between
check and connect cannot reach an internal host. Size and time are capped.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from registry.mcp.http import pinned_client
from registry.mcp.urls import UnsafeURL, check_url

MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HEADERS = {"User-Agent": "Eunice-fetch/1.0", "Accept": "text/html,text/plain,application/pdf,*/*;q=0.5"}


class FetchRefused(Exception):
    """The URL (or a redirect's target) breaks the SSRF rules."""


class FetchFailed(Exception):
    """The page could not be fetched: HTTP error, connection failure, too many redirects."""


class TooLarge(Exception):
    """The body is larger than the configured cap."""


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int
    content_type: str
    body: bytes
    hops: int


async def fetch(url: str, *, max_bytes: int, timeout: float, allow_private: bool) -> Fetched:
    """GET ``url``. Raises FetchRefused, FetchFailed, TooLarge, TimeoutError (after ``timeout`` seconds)."""
    async with asyncio.timeout(timeout):
        return await _follow(url, max_bytes, allow_private)


async def _follow(url: str, max_bytes: int, allow_private: bool) -> Fetched:
    import httpx2

    for hop in range(MAX_REDIRECTS + 1):
        try:
            # Resolving is blocking DNS: off the event loop.
            pinned = await asyncio.to_thread(check_url, url, allow_private=allow_private)
        except UnsafeURL as error:
            raise FetchRefused(f"refused {_show(url)}: {error}") from None
        try:
            async with pinned_client(pinned, _HEADERS) as client, client.stream("GET", pinned.url) as response:
                if response.status_code in _REDIRECTS and "location" in response.headers:
                    url = urljoin(pinned.url, response.headers["location"])
                    continue
                if response.status_code >= 400:
                    raise FetchFailed(
                        f"{_show(pinned.url)} answered HTTP {response.status_code} {response.reason_phrase}"
                    )
                body = await _read_capped(response, max_bytes)
                return Fetched(pinned.url, response.status_code, response.headers.get("content-type", ""), body, hop)
        except httpx2.HTTPError as error:
            raise FetchFailed(f"cannot fetch {_show(pinned.url)}: {type(error).__name__}") from None
    raise FetchFailed(f"more than {MAX_REDIRECTS} redirects, last to {_show(url)}")


async def _read_capped(response, max_bytes: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise TooLarge(
            f"the page is {int(declared):,} bytes, over the {max_bytes:,}-byte limit (EUNICE_FETCH_MAX_BYTES)"
        )
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(f"the page is over the {max_bytes:,}-byte limit (EUNICE_FETCH_MAX_BYTES)")
        chunks.append(chunk)
    return b"".join(chunks)


def _show(url: str) -> str:
    """The URL without any query string or credentials, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
