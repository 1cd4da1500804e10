"""Handlers of the web tools: fetch_url (guarded fetch, readable text) and web_search (pluggable)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.module_loading import import_string

from registry.context import ToolContext
from registry.contract import HintException, Ok, uniform_contract
from registry.declarations import Tool
from registry.handlers import requires
from tools.lib.extract import UnreadableDocument, UnsupportedFormat, detect_format, extract_text
from tools.lib.web_fetch import fetch


class WebSearchDisabled(Exception):
    """No search backend is configured."""


@uniform_contract(name="fetch_url", is_tabular=False)
async def fetch_url(inputs: dict, context: ToolContext) -> Ok:
    """The readable text of a public web page (HTML, text, PDF or DOCX)."""
    url = inputs["url"].strip()
    if urlsplit(url).scheme not in ("http", "https"):
        raise HintException(
            "schema",
            f"url: only http and https addresses can be fetched, not {url[:40]!r}",
            [{"label": "https://" + url.split("://", 1)[-1], "score": 0.5}],
        )
    page = await fetch(
        url,
        max_bytes=settings.WEB_FETCH_MAX_BYTES,
        timeout=settings.WEB_FETCH_TIMEOUT_SECONDS,
        allow_private=settings.MCP_ALLOW_PRIVATE_URLS,
    )
    name = PurePosixPath(urlsplit(page.url).path).name
    try:
        fmt = detect_format(name if "." in name else "", page.content_type, page.body)
        title, text = extract_text(page.body, fmt)
    except (UnsupportedFormat, UnreadableDocument) as error:
        raise UnreadableDocument(f"{page.url}: {error}") from None
    header = f"{title or page.url}\n{page.url} ({fmt}, {len(page.body):,} bytes"
    header += f", after {page.hops} redirect(s))" if page.hops else ")"
    return Ok(rows=1, data=f"{header}\n\n{text}")


def search_backend_configured() -> str | None:
    """Why web_search cannot run here (None when a backend is configured)."""
    if not settings.WEB_SEARCH_BACKEND:
        return "no web search backend is configured (EUNICE_WEB_SEARCH_BACKEND); fetch_url reads a known address"
    return None


@requires(search_backend_configured)
@uniform_contract(name="web_search", is_tabular=False)
def web_search(inputs: dict, context: ToolContext) -> Ok:
    """Search the web through the configured backend; titles, URLs and snippets."""
    backend = search_backend(settings.WEB_SEARCH_BACKEND)
    hits = backend(inputs["query"], inputs.get("limit", 5))
    if not hits:
        raise HintException(
            "fetch", f"the web search found nothing for {inputs['query']!r}", narrow="use fewer or other words"
        )
    lines = [f"{len(hits)} result(s) for {inputs['query']!r}:"]
    for n, hit in enumerate(hits, 1):
        lines.append(f"{n}. {hit.get('title', '')}\n   {hit.get('url', '')}\n   {hit.get('snippet', '')}")
    return Ok(rows=len(hits), data="\n".join(lines))


@lru_cache(maxsize=4)
def search_backend(name: str) -> Callable[[str, int], list[dict]]:
    """The search callable for a backend setting. Raises WebSearchDisabled when none is configured."""
    if not name:
        raise WebSearchDisabled(
            "web search is disabled: no search backend is configured (EUNICE_WEB_SEARCH_BACKEND); "
            "use fetch_url when you know the address"
        )
    if name == "searxng":
        from tools.lib.searxng import searxng_search

        return searxng_search
    return import_string(name)


TOOLS = (
    Tool(
        name="fetch_url",
        description=(
            "Read a public web page (or a PDF/DOCX at a URL) as plain text. Only http and https; "
            "addresses inside private networks are refused. Use it to read a page you know the "
            "address of, e.g. one web_search returned."
        ),
        input_schema={
            "type": "object",
            "properties": {"url": {"type": "string", "minLength": 8, "maxLength": 2000, "description": "http(s) URL."}},
            "required": ["url"],
            "additionalProperties": False,
        },
        handler=fetch_url,
        category="utility",
        status_message="Reading the web page",
        large_output=True,
        timeout_seconds=60,
    ),
    Tool(
        name="web_search",
        description="Search the web and get result titles, addresses and snippets; read a result with fetch_url.",
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        handler=web_search,
        category="utility",
        status_message="Searching the web",
        timeout_seconds=30,
        replaced_by_model_capability="web_search",
        # Its backend is any callable EUNICE_WEB_SEARCH_BACKEND names: third-party code
        # on the network, which may block past any timeout of its own (a DNS lookup does).
        killable=True,
    ),
)
