"""What a server loads after it starts serving: the preloads, on a thread of their own.

A server process used to load everything before it answered anything: the
system tools' handler modules, the model SDK's first-request set-up, tool
search's encoders and index, the sandbox's zygote (4.4 s on a quiet machine,
most of it here). It now serves as soon as Django, the URLconf and the routing
are loaded, and this thread loads the rest meanwhile, and builds the chat page's
chart script the first time.

Nothing waits for the thread on purpose, and nothing fails for it either: a
request that needs what it is loading waits on the same lock or import the
thread holds (``Embedder.default``, the index's lock, Python's per-module import
lock) and is answered once it is there, as it would be on a process that never
preloaded. When the last step is done the start-up heap is frozen
(``eunice.collector``) and ``wait()`` returns True; ``/health/`` says
``"preload": "running"`` until then.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

logger = logging.getLogger("eunice.preload")

Step = Callable[[], object]

_done = threading.Event()
_done.set()  # nothing is preloading in a process that never started it
_lock = threading.Lock()
_active = 0  # runs started and not finished (a reloaded app starts another)


def _system_handlers() -> None:
    from registry.handlers import import_system_handlers

    import_system_handlers()


def _model_sdks() -> None:
    from llm.roles import warm_up

    warm_up()


def _chart_script() -> None:
    # The chat page's chart library: built once per data directory (1.5 s of CPU), which
    # the first chart page after an install would otherwise wait for; then read and
    # gzipped (40 ms), which every process's first chart page would.
    from eunice.chart_script import script

    script()


def _killable() -> None:
    from registry.killable import preload

    preload()


def _tool_search() -> None:
    # The encoders and the index, which the process's first search_tools call
    # would otherwise load and build. EUNICE_PRELOAD_TOOL_SEARCH=0 leaves them to it.
    from django.conf import settings

    if not settings.EUNICE_PRELOAD_TOOL_SEARCH:
        return
    from registry.registry import get_registry
    from registry.search import load_models, warm_up_index

    if load_models():
        warm_up_index(get_registry())


def _sandbox() -> None:
    # The custom-tool sandbox's zygote, when custom tools are on. EUNICE_PRELOAD_SANDBOX=0
    # leaves it to the first call.
    from django.conf import settings

    if settings.FEATURE_FLAGS["custom_tools_enabled"] and settings.EUNICE_PRELOAD_SANDBOX:
        from registry.sandbox.service import preload

        preload()


#: In order: what the first turns need first comes first.
STEPS: tuple[Step, ...] = (_system_handlers, _model_sdks, _chart_script, _killable, _tool_search, _sandbox)


def _run(steps: Sequence[Step]) -> None:
    from django.db import connections

    from eunice.collector import tune_for_serving

    try:
        for step in steps:
            try:
                step()
            except Exception:  # one step that breaks leaves the rest to load, and its work to first use
                logger.exception("preload step %s failed; its first use will load it", step.__name__)
        tune_for_serving()  # everything loaded so far is the start-up heap
    finally:
        connections.close_all()  # this thread's own connections
        _finished()


def _finished() -> None:
    global _active
    with _lock:
        _active -= 1
        if _active == 0:
            _done.set()


def _begin() -> None:
    global _active
    with _lock:
        _active += 1
        _done.clear()


def start(steps: Sequence[Step] = STEPS) -> threading.Thread:
    """Run ``steps`` on a daemon thread, then freeze the start-up heap; returns the thread."""
    _begin()
    thread = threading.Thread(target=_run, args=(tuple(steps),), name="eunice-preload", daemon=True)
    thread.start()
    return thread


def run(steps: Sequence[Step] = STEPS) -> None:
    """Run ``steps`` here and now, then freeze the start-up heap (EUNICE_PRELOAD_WHILE_SERVING=0)."""
    _begin()
    _run(tuple(steps))


def running() -> bool:
    """Whether a preload started in this process is still loading."""
    return not _done.is_set()


def wait(timeout: float | None = None) -> bool:
    """Block until the preload is done (True) or ``timeout`` seconds passed (False)."""
    return _done.wait(timeout)
