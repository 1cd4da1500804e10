"""The server process's garbage collector: the start-up heap frozen, young collections widened."""

import gc
import importlib

import pytest

from eunice import collector


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

    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD
