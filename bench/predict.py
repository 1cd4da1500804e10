"""Training a model as a job: train_model on 100,000 rows x 20 columns, through a real django-q2 worker.

Saves a synthetic dataset (18 numeric columns, 2 categorical ones, a numeric
target with noise) in a conversation, starts ``manage.py qcluster`` on the same
database (a throwaway SQLite file unless DATABASE_URL), and calls ``train_model``
through ``execute_tool`` as the agent does: the call queues the job, waits for it
and relays its progress. Prints the wall time of the call (goal: <= 30 s), the
progress updates heard, the chosen model's figures, and as the peer the same
work done by scikit-learn called directly in this process (both candidates'
cross-validation on the same folds, then the final fit).

Usage: python bench/predict.py [--rows 100000] [--json]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

import _django


def dataset(rows: int):  # noqa: ANN201 (a DataFrame; pandas loads after Django)
    import numpy as np
    import pandas as pd
    from sklearn.datasets import make_regression

    x, y = make_regression(n_samples=rows, n_features=18, n_informative=10, noise=10.0, random_state=0)
    frame = pd.DataFrame(x, columns=[f"x{n:02d}" for n in range(18)])
    rng = np.random.default_rng(0)
    frame["region"] = rng.choice(["north", "south", "east", "west"], rows)
    frame["segment"] = rng.choice([f"s{n}" for n in range(12)], rows)
    frame["target"] = y + frame.region.map({"north": 40, "south": 0, "east": -25, "west": 10}).to_numpy()
    return frame


def worker(database_url: str) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "eunice.settings"}
    return subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=_django.ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop(cluster: subprocess.Popen) -> None:
    """SIGTERM the cluster's process group; SIGKILL it if it has not stopped in 30 s."""
    os.killpg(cluster.pid, signal.SIGTERM)
    try:
        cluster.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(cluster.pid, signal.SIGKILL)
        cluster.wait(timeout=10)


def direct_peer(frame) -> float:  # noqa: ANN001
    """The same cross-validation and fit with scikit-learn called directly; seconds."""
    from tools.lib import modelling

    start = time.monotonic()
    with modelling.one_thread():
        training = modelling.training_data(frame, "target")
        scores = {}
        for algorithm in modelling.AUTO_CANDIDATES:
            model = modelling.pipeline(training.features, modelling.estimator(training.task, algorithm))
            scores[algorithm] = modelling.fold_scores(model, training)["r2"]["mean"]
        best = max(scores, key=scores.__getitem__)
        modelling.pipeline(training.features, modelling.estimator(training.task, best)).fit(training.x, training.y)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--database-url")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("EUNICE_FILES_DIR", tempfile.mkdtemp(prefix="eunice-bench-files-"))
    database = _django.setup(args.database_url)

    from conversations.models import Conversation
    from datacatalog.store import ConversationCatalog
    from registry.context import ToolContext
    from registry.registry import get_registry
    from tools.models import TrainedModel

    conversation = Conversation.objects.create(tenant_id="bench", title="predict bench")
    frame = dataset(args.rows)
    ConversationCatalog("bench", str(conversation.pk)).save("sales", frame, source="upload")
    cluster = worker(os.environ["DATABASE_URL"])
    heard: list[tuple[float, str, float | None]] = []
    try:
        start = time.monotonic()
        context = ToolContext(
            tenant_id="bench",
            conversation_id=str(conversation.pk),
            progress=lambda message, fraction=None: heard.append((time.monotonic() - start, message, fraction)),
        )
        result = get_registry().execute_tool(
            "train_model", {"dataset": "sales", "target": "target", "wait_seconds": 120}, context
        )
        elapsed = time.monotonic() - start
    finally:
        stop(cluster)
    if not args.json:
        for seconds, message, fraction in heard:
            print(f"  {seconds:6.2f} s  {'' if fraction is None else f'{fraction:4.0%}'}  {message}")
    row = TrainedModel.objects.filter(tenant_id="bench").first()
    if row is None or row.status != "ready":
        raise SystemExit(f"training did not finish: {result.content[:500]}")
    training_started = next((t for t, message, _ in heard if "queued" not in message), elapsed)
    results = {
        "database": database,
        "rows x columns": f"{len(frame):,} x {frame.shape[1] - 1} (+ target)",
        "train_model call s (goal <= 30)": elapsed,
        "queued until a worker started s": training_started,
        "progress updates relayed": len(heard),
        "chosen": row.algorithm,
        "cv R2 (chosen)": row.metrics["r2"]["mean"],
        "cv RMSE (chosen)": row.metrics["neg_root_mean_squared_error"]["mean"],
        "candidates": "; ".join(f"{c['algorithm']} R2 {c['metrics']['r2']['mean']:.4f}" for c in row.candidates),
        "peer: scikit-learn directly, same work s": direct_peer(frame),
    }
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()
