"""The server loads tool search's models when it starts, not in the first search_tools call."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from registry import search
from registry.retrieval import Embedder, EmbedderUnavailable
from registry.search import warm_up_index

ROOT = Path(__file__).resolve().parent.parent

LOADED_AFTER_START = (
    "import eunice.asgi, eunice.preload; eunice.preload.wait(120); "
    "from registry.retrieval import Embedder; print(Embedder._default is not None)"
)


def loaded_after_start(**env: str) -> str:
    """Load the app in a fresh process, as a server does; whether the models are in memory."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "eunice.settings", "SECRET_KEY": "test-only", **env}
    result = subprocess.run(
        [sys.executable, "-c", LOADED_AFTER_START], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_the_search_models_are_in_memory_once_the_app_has_loaded():
    assert loaded_after_start() == "True"


def test_preloading_can_be_turned_off():
    assert loaded_after_start(EUNICE_PRELOAD_TOOL_SEARCH="0") == "False"


def test_models_that_cannot_load_are_logged_and_the_server_still_starts(monkeypatch, caplog):
    def unavailable():
        raise EmbedderUnavailable("cannot load the multilingual encoder: weights missing")

    monkeypatch.setattr(Embedder, "default", unavailable)
    with caplog.at_level(logging.WARNING, logger="eunice.registry"):
        assert search.load_models() is False
    assert "did not load at start: cannot load the multilingual encoder: weights missing" in caplog.text


@pytest.mark.django_db
def test_the_index_is_built_at_start_so_the_first_search_builds_nothing(registry):
    warm_up_index(registry)
    built = registry.tool_search()
    assert set(built._signatures) == set(registry.definitions()) != set()
    assert built._generation == registry.snapshot_generation  # the first search finds it current


def test_an_index_that_cannot_be_built_is_logged_and_the_server_still_starts(registry, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("the tool_definitions table does not exist yet")

    monkeypatch.setattr(search.ToolSearch, "search", broken)
    with caplog.at_level(logging.WARNING, logger="eunice.registry"):
        warm_up_index(registry)
    assert "the index was not built at start: the tool_definitions table does not exist yet" in caplog.text
