"""How fast this machine is right now, as one figure printed beside a benchmark's own.

The machines these benchmarks run on are shared: the same code has measured
twice as slow on one day as on the day before. ``reference_ms`` times a
fixed piece of pure-Python work (JSON, dicts, strings: what a server does
per message) so that figures from different days can be told apart from a
change in the code. Lower is faster; a 2026-11-30 reading is in the README.
"""

from __future__ import annotations

import json
import statistics
import time

_MESSAGE = {"type": "text_delta", "text": "w123 ", "ts": 1764512345678.125, "index": 0}


def _work() -> None:
    for n in range(10_000):
        encoded = json.dumps({**_MESSAGE, "n": n})
        decoded = json.loads(encoded)
        "".join(sorted(decoded)).upper()


def reference_ms(repeats: int = 7) -> float:
    """Median wall time of the fixed work, in ms (about 50–100 ms each run)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        _work()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


if __name__ == "__main__":
    print(f"machine reference: {reference_ms()} ms")
