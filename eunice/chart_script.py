"""The chat page's chart library: vega, vega-lite and vega-embed as one script.

The script comes from vl-convert (a pinned package we already use to render charts
to images): its bundler puts the three libraries together offline, in the versions
it ships. It is built once per data directory (about 1.5 s of CPU), kept under
``VAR_DIR/assets/``, and served from memory with a year's caching, gzipped for a
browser that takes it; its URL names the versions, so a new vl-convert is a new URL.

vega-embed carries Vega's expression interpreter: the page draws with ``ast: true``,
so a chart's expressions are interpreted, never compiled with ``Function()``, and
the chat page's Content-Security-Policy forbids eval (docs/deploy.md).
"""

from __future__ import annotations

import functools
import gzip
import os
import threading
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_GET

_building = threading.Lock()
GLOBALS = "window.vegaEmbed = vegaEmbed; window.vega = vega; window.vegaLite = vegaLite;"  # what the page uses


@functools.cache
def version_tag() -> str:
    """The three libraries' versions, as the script's URL carries them."""
    import vl_convert

    lite = vl_convert.get_vegalite_versions()[-1]
    return f"vega-{vl_convert.get_vega_version()}-lite-{lite}-embed-{vl_convert.get_vega_embed_version()}"


def url() -> str:
    return reverse("chart-script", args=[version_tag()])


@functools.cache
def script() -> tuple[bytes, bytes]:
    """The script, plain and gzipped: read from the data directory, or built there once."""
    path = Path(settings.VAR_DIR) / "assets" / f"charts-{version_tag()}.js"
    with _building:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            import vl_convert

            # The latest vega-lite vl-convert ships, as version_tag names. The bundle's
            # top-level names (one is `L`) would be globals of the page and overwrite its
            # other libraries' (Leaflet's `L`): it runs in a function scope of its own.
            bundle = vl_convert.javascript_bundle(GLOBALS)
            data = b"(function () {\n" + bundle.encode() + b"\n})();\n"
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
            partial.write_bytes(data)
            os.replace(partial, path)  # another process never reads half a file
    return data, gzip.compress(data, compresslevel=9, mtime=0)


@require_GET
def serve(request: HttpRequest, tag: str) -> HttpResponse:
    """The script; a page drawn before an upgrade (an older tag) is sent to the current one."""
    if tag != version_tag():
        return HttpResponseRedirect(url())
    plain, packed = script()
    zipped = "gzip" in request.headers.get("Accept-Encoding", "")
    response = HttpResponse(packed if zipped else plain, content_type="text/javascript; charset=utf-8")
    if zipped:
        response["Content-Encoding"] = "gzip"
    response["Vary"] = "Accept-Encoding"
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    return response
