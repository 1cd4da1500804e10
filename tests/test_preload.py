"""A server answers while it preloads: a request that needs what is loading waits for it."""

import gc
import threading

import pytest

from eunice import preload
from registry.retrieval import Embedder
from registry.search import load_models

pytestmark = pytest.mark.django_db


@pytest.fixture
def held():
    """A preload step that holds the thread until the test lets it go (``held.release()``)."""
    entered, gate = threading.Event(), threading.Event()

    def held_step() -> None:
        entered.set()
        assert gate.wait(60)

    held_step.entered = entered
    held_step.release = gate.set
    yield held_step
    gate.set()


@pytest.fixture
def restored_gc():
    """The preload freezes the heap when it is done; leave the test process's collector as it was."""
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    yield
    assert preload.wait(120)
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    if frozen:
        gc.freeze()


def test_health_answers_while_the_server_preloads_and_says_so(client, held, restored_gc):
    preload.start([held])
    assert held.entered.wait(30)

    during = client.get("/health/")
    assert during.status_code == 200
    assert during.json()["status"] == "ok"
    assert during.json()["preload"] == "running"

    held.release()
    assert preload.wait(60)
    assert client.get("/health/").json()["preload"] == "done"


def test_a_search_arriving_while_the_models_load_waits_for_them_and_is_answered(call, monkeypatch, restored_gc):
    monkeypatch.setattr(Embedder, "_default", None)  # a process that has not loaded them yet
    loads = []
    real_init = Embedder.__init__

    def counted(self, *args, **kwargs):
        loads.append(threading.current_thread().name)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(Embedder, "__init__", counted)

    preload.start([load_models])
    arrived_during_preload = preload.running()
    result = call("search_tools", query="visualise sales as bars", limit=2)

    assert arrived_during_preload
    assert result.error is None, result.content
    assert "- create_chart:" in result.content
    assert loads == ["eunice-preload"]  # loaded once, by the preload; the search waited for it
    assert preload.wait(60)
