"""What a tools/list entry says about itself for people: its display title and its icons
(MCP 2025-11-25), as the review page and the REST tools list show them.

An icon is shown as an image only when it comes inline (a ``data:image/…`` URI): fetching
a server's icon URL from the page would reach a host the server chose, which the page's
Content-Security-Policy refuses anyway; such an icon is shown as its address.
"""

from __future__ import annotations

MAX_ICONS = 8


def title_of(remote: dict) -> str:
    """The tool's display title: its own ``title``, else its annotations' (the older place)."""
    title = remote.get("title") or (remote.get("annotations") or {}).get("title") or ""
    return str(title)[:200]


def icons_of(remote: dict) -> list[dict]:
    """The tool's icons: ``src``, ``mime_type``, ``sizes``, ``theme`` and ``inline`` (whether
    ``src`` is a data: image the page may show)."""
    icons = []
    for icon in (remote.get("icons") or [])[:MAX_ICONS]:
        if not isinstance(icon, dict) or not isinstance(icon.get("src"), str):
            continue
        src = icon["src"]
        icons.append(
            {
                "src": src,
                "mime_type": str(icon.get("mimeType") or ""),
                "sizes": [str(size) for size in icon.get("sizes") or []],
                "theme": str(icon.get("theme") or ""),
                "inline": src.startswith("data:image/"),
            }
        )
    return icons
