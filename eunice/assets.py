"""Front-end libraries that ship inside Python packages, served as local static files.

Nothing is fetched from a CDN: the chat page's charts and maps work offline. The
chart library is built from another package (``eunice/chart_script.py``).
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

# (URL prefix under STATIC_URL, package, folder inside the package)
VENDORED = (
    ("vendor/leaflet", "leaflet", "static/leaflet"),  # from django-leaflet (not installed as an app)
)


def vendor_static_dirs() -> list[tuple[str, str]]:
    """STATICFILES_DIRS entries for the vendored libraries that are installed.

    A missing package is skipped (its cards then show their data as text);
    ``find_spec`` only locates a package, it never imports it.
    """
    dirs = []
    for prefix, package, folder in VENDORED:
        spec = find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        path = Path(next(iter(spec.submodule_search_locations))) / folder
        if path.is_dir():
            dirs.append((prefix, str(path)))
    return dirs
