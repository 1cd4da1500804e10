"""A process's first explain_prediction: what importing the model file format costs.

Trains a model on scikit-learn's diabetes data once, then starts fresh
processes loaded like a server (Django, then the server's preloads: the
system tools, the model SDKs, tool search) and times each one's first
``explain_prediction`` call through the registry, and its second. Rounds
alternate between skops imported through ``tools.lib.skops_io`` (its search
of every loaded module skipped) and as a plain import, the peer. Prints the
medians of wall and CPU seconds, and the loaded modules' count.

Usage: python bench/model_files.py [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import _django

CHILD = """
import json, os, sys, time
sys.path.insert(0, {root!r})
import django
django.setup()
from eunice import preload
preload.run()
if {plain!r}:
    import tools.lib.skops_io
    tools.lib.skops_io._name_scipy_ufuncs = lambda: []
from registry.context import ToolContext
from registry.registry import get_registry
context = ToolContext(tenant_id="bench", conversation_id={conversation!r})
inputs = {{"model": "progression", "dataset": "diabetes", "row_index": 3}}
figures = {{"modules": len(sys.modules)}}
for call in ("first", "second"):
    wall, cpu = time.monotonic(), time.process_time()
    result = get_registry().execute_tool("explain_prediction", inputs, context)
    assert result.ok, result.content
    figures[call] = (time.monotonic() - wall, time.process_time() - cpu)
print(json.dumps(figures))
"""


def train(conversation_id: str) -> None:
    from sklearn.datasets import load_diabetes

    from datacatalog.store import ConversationCatalog
    from registry.context import ToolContext
    from registry.registry import get_registry
    from tools.models import TrainedModel
    from tools.trained_models import run_training_job

    ConversationCatalog("bench", conversation_id).save("diabetes", load_diabetes(as_frame=True).frame, source="upload")
    inputs = {"dataset": "diabetes", "target": "target", "name": "progression", "wait_seconds": 0}
    queued = get_registry().execute_tool(
        "train_model", inputs, ToolContext(tenant_id="bench", conversation_id=conversation_id)
    )
    assert queued.ok, queued.content
    assert run_training_job(TrainedModel.objects.get(name="progression").pk) == "ready"


def first_calls(conversation_id: str, plain: bool) -> dict:
    script = CHILD.format(root=str(_django.ROOT), plain=plain, conversation=conversation_id)
    env = {**os.environ, "EUNICE_PRELOAD_SANDBOX": "0"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--database-url")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("EUNICE_FILES_DIR", tempfile.mkdtemp(prefix="eunice-bench-files-"))
    database = _django.setup(args.database_url)
    from conversations.models import Conversation

    conversation = str(Conversation.objects.create(tenant_id="bench", title="model files bench").pk)
    train(conversation)
    runs: dict[bool, list[dict]] = {False: [], True: []}
    for _ in range(args.rounds):
        for plain in (False, True):
            runs[plain].append(first_calls(conversation, plain))

    def median(plain: bool, call: str, which: int) -> float:
        return statistics.median(run[call][which] for run in runs[plain])

    results = {
        "database": database,
        "rounds (each: a fresh process per variant)": args.rounds,
        "modules loaded before the first call": int(statistics.median(run["modules"] for run in runs[False])),
        "first call, skops_io: wall s": median(False, "first", 0),
        "first call, skops_io: CPU s": median(False, "first", 1),
        "first call, plain import (peer): wall s": median(True, "first", 0),
        "first call, plain import (peer): CPU s": median(True, "first", 1),
        "second call: wall s": median(False, "second", 0),
    }
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()
