"""Set Django up for a benchmark: the configured database, or a throwaway SQLite file."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup(database_url: str | None = None, *, seed: bool = True) -> str:
    """Configure and migrate a database (and seed the system tools unless ``seed`` is
    false); returns a printable description of it."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eunice.settings")
    url = database_url or os.environ.get("DATABASE_URL")
    if not url:
        url = f"sqlite:///{tempfile.mkdtemp(prefix='eunice-bench-')}/bench.sqlite3"
    os.environ["DATABASE_URL"] = url
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    if seed:
        call_command("seed_tools", verbosity=0)
    return url.split("@")[-1] if "@" in url else url


def print_results(results: dict, as_json: bool) -> None:
    """One JSON object, or one aligned `key: value` line per figure."""
    import json

    if as_json:
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in results.items()}))
        return
    width = max(len(key) for key in results)
    for key, value in results.items():
        shown = f"{value:.2f}" if isinstance(value, float) else value
        print(f"{key:>{width}}: {shown}")
