#!/usr/bin/env python
"""Custom-tool sandbox timings: cold start of the zygote, then warm runs of a small pandas tool.

    bench/sandbox.py [--runs N] [--json]

Targets: warm p95 <= 150 ms, cold <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd  # noqa: E402

from registry.sandbox.client import Limits, Zygote  # noqa: E402

TOOL = "d = df.copy()\nd['revenue'] = d['units'] * d['price']\nresult = d.groupby('region')['revenue'].sum()"
DATA = pd.DataFrame({"region": ["n", "s", "e"] * 100, "units": range(300), "price": [1.5] * 300})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="eunice-bench-")
    started = time.perf_counter()
    zygote = Zygote(scratch)
    first = zygote.run(TOOL, {}, {"default": DATA}, Limits(), lambda n, i: "")
    cold_ms = (time.perf_counter() - started) * 1000
    assert first.ok, first.error
    warm = []
    for _ in range(args.runs):
        t = time.perf_counter()
        outcome = zygote.run(TOOL, {}, {"default": DATA}, Limits(), lambda n, i: "")
        warm.append((time.perf_counter() - t) * 1000)
        assert outcome.ok, outcome.error
    zygote.close()
    warm.sort()
    figures = {
        "cold_ms": round(cold_ms, 1),
        "warm_p50_ms": round(statistics.median(warm), 1),
        "warm_p95_ms": round(warm[int(len(warm) * 0.95) - 1], 1),
        "runs": args.runs,
        "layers": first.layers,
    }
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:12} {value}")


if __name__ == "__main__":
    main()
