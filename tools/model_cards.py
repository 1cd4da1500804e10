"""The predict tools' cards and the figures they show: training_results, model_recommendation,
shap_explanation (drawn by static/eunice/chat.js; the types are listed in registry.cards)."""

from __future__ import annotations

from typing import Any

from tools.lib import modelling
from tools.models import TrainedModel

SHOWN_CONTRIBUTIONS = 12


def sampled(row: TrainedModel) -> str:
    """Words saying the candidates were compared on a sample, when they were."""
    return f" on a sample of {row.cv_rows:,} rows" if row.cv_rows < row.rows else ""


def figure(metric: str, scores: dict) -> str:
    """One metric as text: its label, mean and standard deviation over the folds."""
    return f"{modelling.METRIC_LABELS[metric]} {scores['mean']:.3f} ± {scores['std']:.3f}"


def results_card(row: TrainedModel) -> dict:
    card = {
        "type": "training_results",
        "title": f"{row.name} v{row.version}",
        "model": row.name,
        "version": row.version,
        "task": row.task,
        "target": row.target,
        "dataset": row.dataset,
        "algorithm": row.algorithm,
        "trained_rows": row.rows,
        "compared_on_rows": row.cv_rows,
        "features": columns_of(row),
        "classes": row.classes,
        "metrics": [
            {"metric": modelling.METRIC_LABELS[m], "mean": round(f["mean"], 4), "std": round(f["std"], 4)}
            for m, f in row.metrics.items()
        ],
    }
    return card


def recommendation_card(row: TrainedModel) -> dict:
    metric = modelling.primary(modelling.Task(row.task))
    ranked_candidates = sorted(row.candidates, key=lambda c: -c["metrics"][metric]["mean"])
    runner_up = ranked_candidates[1] if len(ranked_candidates) > 1 else None
    label = modelling.METRIC_LABELS[metric]
    best = ranked_candidates[0]["metrics"][metric]["mean"]
    reason = (
        f"{row.algorithm} has the best cross-validated {label} ({best:.3f})"
        + (f", against {runner_up['algorithm']}'s {runner_up['metrics'][metric]['mean']:.3f}" if runner_up else "")
        + "."
    )
    card = {
        "type": "model_recommendation",
        "title": f"Recommended for {row.target}",
        "model": row.name,
        "version": row.version,
        "metric": label,
        "recommended": row.algorithm,
        "reason": reason,
        "candidates": [
            {
                "algorithm": c["algorithm"],
                "score": round(c["metrics"][metric]["mean"], 4),
                "std": round(c["metrics"][metric]["std"], 4),
            }
            for c in ranked_candidates
        ],
    }
    return card


def columns_of(row: TrainedModel) -> list[str]:
    return list(row.features.get("numeric", [])) + list(row.features.get("categorical", []))


def features_of(row: TrainedModel) -> modelling.Features:
    return modelling.Features(list(row.features.get("numeric", [])), list(row.features.get("categorical", [])))


def row_card(row, features, contributions, values, base, prediction, output, source) -> dict:  # noqa: ANN001
    import numpy as np

    order = np.argsort(-np.abs(contributions))[:SHOWN_CONTRIBUTIONS]
    card = {
        "type": "shap_explanation",
        "title": f"Why {row.name} predicts {shown(prediction)} ({source})",
        "model": row.name,
        "version": row.version,
        "scope": "row",
        "output": output,
        "prediction": plain(prediction),
        "base_value": round(base, 6),
        "contributions": [
            {
                "feature": features.columns[i],
                "value": plain(values[features.columns[i]]),
                "contribution": round(float(contributions[i]), 6),
            }
            for i in order
        ],
    }
    return card


def overall_card(row, features, importance, source, output) -> dict:  # noqa: ANN001
    import numpy as np

    order = np.argsort(-importance)[:SHOWN_CONTRIBUTIONS]
    card = {
        "type": "shap_explanation",
        "title": f"What drives {row.name} ({source})",
        "model": row.name,
        "version": row.version,
        "scope": "overall",
        "output": output,
        "contributions": [
            {"feature": features.columns[i], "importance": round(float(importance[i]), 6)} for i in order
        ],
    }
    return card


def shown(value: Any) -> str:
    """A prediction as a person reads it: a number to 4 significant digits, a label as it is."""
    bare = plain(value)
    return f"{bare:.4g}" if isinstance(bare, float) else repr(bare) if isinstance(bare, str) else str(bare)


def plain(value: Any) -> Any:
    """A cell or label as JSON: numpy scalars become Python ones, a missing value None."""
    import pandas as pd

    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value
