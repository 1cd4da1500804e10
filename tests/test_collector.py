"""The server process's garbage collector: the start-up heap frozen, young collections widened."""

import gc
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eunice import collector, preload

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def restored_gc():
    """Each test leaves the test process's collector as it found it."""
    thresholds = gc.get_threshold()
    frozen = gc.get_freeze_count()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    if frozen:
        gc.freeze()


def test_tuning_freezes_what_exists_and_widens_only_the_young_generation(restored_gc):
    gc.unfreeze()
    _, middle, old = gc.get_threshold()

    collector.tune_for_serving()

    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (collector.YOUNG_THRESHOLD, middle, old)


def test_an_object_made_after_tuning_is_still_collected(restored_gc):
    collector.tune_for_serving()

    class Node:
        pass

    cycle = Node()
    cycle.self = cycle
    collected_before = gc.get_stats()[0]["collected"]
    del cycle
    assert gc.collect(0) >= 1
    assert gc.get_stats()[0]["collected"] > collected_before


def test_loading_the_asgi_application_tunes_the_collector(restored_gc):
    import eunice.asgi

    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    importlib.reload(eunice.asgi)
    assert preload.wait(120)  # the heap is frozen once the preloads are in

    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD


def test_the_views_are_imported_before_the_heap_is_frozen():
    # In a fresh process, as a server loads the app: the page views come in with
    # the URLconf at load time, so they are part of the frozen start-up heap.
    code = (
        "import sys, eunice.asgi; "
        "print(all(m in sys.modules for m in ('conversations.views', 'registry.staff_views', 'eunice.urls')))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "eunice.settings", "SECRET_KEY": "test-only"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )

    assert result.stdout.strip() == "True", result.stderr[-2000:]


def test_the_system_tools_and_the_sdks_first_call_set_up_load_with_the_app():
    # The first turn after a start used to import the tool handlers (DuckDB,
    # the retrieval index: ~0.5 s under the GIL) while other answers streamed.
    code = (
        "import sys, eunice.asgi, eunice.preload; eunice.preload.wait(120); "
        "from anthropic._tracing import trace_context_injector; "
        "print(all(m in sys.modules for m in ('tools.sql', 'tools.corpora', 'tools.utility')), "
        "trace_context_injector.cache_info().currsize)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "eunice.settings", "SECRET_KEY": "test-only"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )

    assert result.stdout.split() == ["True", "1"], result.stderr[-2000:]
