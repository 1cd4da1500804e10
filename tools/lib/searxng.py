"""The bundled web_search backend: a SearXNG instance's JSON API (EUNICE_WEB_SEARCH_URL).

The instance is the operator's choice (often on the local network), so it is
not subject to the SSRF rules that guard model-chosen URLs.
"""

from __future__ import annotations

from django.conf import settings


class SearchBackendError(Exception):
    """The search backend did not answer usefully."""


def searxng_search(query: str, limit: int) -> list[dict]:
    """Up to ``limit`` results ``{title, url, snippet}``. Raises SearchBackendError."""
    import httpx2

    if not settings.WEB_SEARCH_URL:
        raise SearchBackendError("EUNICE_WEB_SEARCH_BACKEND=searxng needs EUNICE_WEB_SEARCH_URL")
    try:
        response = httpx2.get(
            f"{settings.WEB_SEARCH_URL}/search",
            params={"q": query, "format": "json"},
            timeout=settings.WEB_FETCH_TIMEOUT_SECONDS,
            trust_env=False,
        )
        response.raise_for_status()
        results = response.json().get("results", [])
    except (httpx2.HTTPError, ValueError) as error:
        raise SearchBackendError(f"the search backend failed: {type(error).__name__}") from None
    return [
        {"title": r.get("title", ""), "url": r.get("url", ""), "snippet": r.get("content", "")}
        for r in results[:limit]
        if isinstance(r, dict)
    ]
