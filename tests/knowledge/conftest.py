"""Files under a per-test directory and empty per-process search caches."""

import pytest

from registry.context import ToolContext
from tests.conversations.conftest import model  # noqa: F401 (the scripted chat model, for the insight tools)
from tools.lib import entity_store, passages


@pytest.fixture(autouse=True)
def files_dir(settings, tmp_path):
    settings.EUNICE_FILES_DIR = tmp_path / "files"
    passages.clear_cache()
    entity_store.clear_cache()
    return settings.EUNICE_FILES_DIR


@pytest.fixture
def upload(files_dir):
    """upload(name, data, tenant="acme") writes a file into a tenant's uploads folder."""

    def write(name, data, tenant="acme"):
        path = files_dir / tenant / "uploads" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        return path

    return write


@pytest.fixture
def tool(registry):
    """tool(name, inputs, tenant=..., context=...) for inputs `call` cannot take as keywords (a `name` field)."""

    def run(name, inputs, tenant="acme", context=None):
        return registry.execute_tool(
            name, inputs, ToolContext(**{"tenant_id": tenant, "user_id": "u1", **(context or {})})
        )

    return run
