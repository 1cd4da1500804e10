"""The garbage collector, set up for a long-running server process.

CPython's cyclic collector stops the whole process while it walks a
generation. In a server, the oldest generation holds everything imported at
start-up (Django, the SDKs, the registry: a few hundred thousand objects), so
each full collection paused every open websocket for 200-300 ms in
`bench/turns.py`, and young collections ran several hundred times per run.

`tune_for_serving()` moves what exists after start-up into the permanent
generation (`gc.freeze()`), which collections skip, and makes young
collections less frequent. Objects made while serving are still collected as
before; only the start-up heap, which lives as long as the process anyway,
is no longer walked.
"""

from __future__ import annotations

import gc

#: Allocations (net of frees) between young collections; CPython's default
#: is 700. Most of what a streamed chunk allocates is freed by reference
#: counting straight away, so a larger window mostly saves walks of the
#: per-conversation objects that survive anyway.
YOUNG_THRESHOLD = 10_000


def tune_for_serving() -> None:
    """Freeze the start-up heap and widen the young generation. Call once, after imports."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
