"""The scikit-learn side of the predict tools: tasks, features, pipelines, scores, SHAP.

No Django here: a frame goes in, a fitted pipeline, figures or contributions come out.
A pipeline is ``prepare`` (median-imputed, scaled numbers; most-frequent-imputed,
one-hot categories) then ``model``. The task is classification when the target is
not numeric, is boolean, or holds a few whole numbers; otherwise regression.
Every candidate algorithm is scored by cross-validation on the same folds, and the
best mean score wins (accuracy for classification, R² for regression).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from sklearn.pipeline import Pipeline


class Task(StrEnum):
    CLASSIFICATION = "classification"
    REGRESSION = "regression"


class Algorithm(StrEnum):
    LINEAR = "linear"  # logistic regression / ridge
    GRADIENT_BOOSTING = "gradient_boosting"  # histogram gradient boosting
    RANDOM_FOREST = "random_forest"


# Tried when no algorithm is named: both scale to 100,000 rows in seconds (a forest does not).
AUTO_CANDIDATES = (Algorithm.LINEAR, Algorithm.GRADIENT_BOOSTING)
# A numeric target with at most this many distinct whole numbers is taken for classes.
MAX_CLASS_CODES = 10
# A text column with more distinct values than this is a name or free text, not a category.
MAX_CATEGORIES = 50
MIN_ROWS = 20
# Candidates are compared on at most this many rows (a seeded sample); the kept one is fitted on all.
MAX_CV_ROWS = 20_000
MIN_PER_CLASS = 2
# What each task's figures are, in the order shown; the first one picks the winner.
METRICS = {
    Task.CLASSIFICATION: ("accuracy", "f1_macro"),
    Task.REGRESSION: ("r2", "neg_root_mean_squared_error", "neg_mean_absolute_error"),
}
METRIC_LABELS = {
    "accuracy": "accuracy",
    "f1_macro": "F1 (macro)",
    "r2": "R²",
    "neg_root_mean_squared_error": "RMSE",
    "neg_mean_absolute_error": "MAE",
}


@dataclass
class Features:
    numeric: list[str]
    categorical: list[str]
    skipped: dict[str, str] = field(default_factory=dict)  # column -> why it is not used

    @property
    def columns(self) -> list[str]:
        return self.numeric + self.categorical


def one_thread() -> Any:
    """A context in which scikit-learn's OpenMP loops (gradient boosting) and BLAS use one thread.

    Measured on the shared 2-core machine under load: 5-fold cross-validation of a
    boosted classifier on 569 rows took 54 s with OpenMP's default threads (they spin
    waiting for a core) and 2.2 s with one; 100,000 rows in a django-q2 worker, 40-60 s
    a fold against 3 s.
    """
    # The limit reaches only libraries already loaded: load scikit-learn's OpenMP runtime first.
    import sklearn.ensemble  # noqa: F401
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def is_number(series: pd.Series) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


def detect_task(target: pd.Series) -> Task:
    """Classification for labels, booleans and a few whole-number codes; regression otherwise."""
    values = target.dropna()
    if not is_number(values):
        return Task.CLASSIFICATION
    whole = bool((values == values.round()).all())
    return Task.CLASSIFICATION if whole and values.nunique() <= MAX_CLASS_CODES else Task.REGRESSION


def choose_features(frame: pd.DataFrame, target: str, wanted: list[str] | None) -> Features:
    """The usable feature columns: every column but the target unless ``wanted`` names them."""
    import pandas as pd

    chosen = Features([], [])
    for column in wanted or [str(c) for c in frame.columns if str(c) != target]:
        series = frame[column]
        if series.isna().all():
            chosen.skipped[column] = "no values"
        elif pd.api.types.is_bool_dtype(series) or is_number(series):
            chosen.numeric.append(column)
        elif pd.api.types.is_datetime64_any_dtype(series):
            chosen.skipped[column] = "a date (derive numbers from it first)"
        elif series.nunique() > MAX_CATEGORIES:
            chosen.skipped[column] = f"text with {series.nunique():,} distinct values (more than {MAX_CATEGORIES})"
        else:
            chosen.categorical.append(column)
    return chosen


def estimator(task: Task, algorithm: Algorithm) -> Any:
    """A fresh, seeded estimator of ``algorithm`` for ``task``."""
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.linear_model import LogisticRegression, Ridge

    makers: dict[tuple[Task, Algorithm], Callable[[], Any]] = {
        (Task.CLASSIFICATION, Algorithm.LINEAR): lambda: LogisticRegression(max_iter=1000),
        (Task.REGRESSION, Algorithm.LINEAR): lambda: Ridge(alpha=1.0),
        (Task.CLASSIFICATION, Algorithm.GRADIENT_BOOSTING): lambda: HistGradientBoostingClassifier(random_state=0),
        (Task.REGRESSION, Algorithm.GRADIENT_BOOSTING): lambda: HistGradientBoostingRegressor(random_state=0),
        (Task.CLASSIFICATION, Algorithm.RANDOM_FOREST): lambda: RandomForestClassifier(
            n_estimators=100, min_samples_leaf=2, random_state=0, n_jobs=1
        ),
        (Task.REGRESSION, Algorithm.RANDOM_FOREST): lambda: RandomForestRegressor(
            n_estimators=100, min_samples_leaf=2, random_state=0, n_jobs=1
        ),
    }
    return makers[(task, algorithm)]()


def pipeline(features: Features, model: Any) -> Pipeline:
    """prepare (impute, scale, one-hot) → model."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    parts = []
    if features.numeric:
        numbers = Pipeline([("impute", SimpleImputer(strategy="median")), ("scale", StandardScaler())])
        parts.append(("num", numbers, features.numeric))
    if features.categorical:
        onehot = OneHotEncoder(handle_unknown="ignore", max_categories=20, sparse_output=False)
        categories = Pipeline([("impute", SimpleImputer(strategy="most_frequent")), ("onehot", onehot)])
        parts.append(("cat", categories, features.categorical))
    return Pipeline([("prepare", ColumnTransformer(parts)), ("model", model)])


def inputs_of(frame: pd.DataFrame, features: Features) -> pd.DataFrame:
    """The feature columns as the pipeline takes them: numbers as floats, categories as text."""
    import pandas as pd

    out = pd.DataFrame(index=frame.index)
    for column in features.numeric:
        out[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    for column in features.categorical:
        out[column] = frame[column].astype("object").where(frame[column].notna(), None)
    return out


def folds(task: Task, rows: int) -> Any:
    """The cross-validation splitter: 5 shuffled folds (3 past 50,000 rows), stratified for classes."""
    from sklearn.model_selection import KFold, StratifiedKFold

    n = 3 if rows > 50_000 else 5
    return (StratifiedKFold if task is Task.CLASSIFICATION else KFold)(n_splits=n, shuffle=True, random_state=0)


def shap_values(model: Pipeline, rows: pd.DataFrame, background: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """SHAP values of ``rows`` per transformed feature, and the base value(s).

    Tree models get TreeExplainer (exact); linear ones LinearExplainer over
    ``background``; a forest, too, TreeExplainer. Values are in the model's raw
    output: the predicted value, or log-odds per class. Shapes: (rows, features)
    or (rows, features, classes); the base value (1,) or (classes,).
    """
    import numpy as np
    import shap

    final = model[-1]
    prepared = model[:-1].transform(rows)
    if final.__class__.__name__.startswith(("LogisticRegression", "Ridge")):
        explainer = shap.LinearExplainer(final, model[:-1].transform(background))
    else:
        explainer = shap.TreeExplainer(final)
    values = np.asarray(explainer.shap_values(prepared))
    return values, np.atleast_1d(np.asarray(explainer.expected_value, dtype="float64"))


def per_column(model: Pipeline, values: np.ndarray, features: Features) -> np.ndarray:
    """Sum SHAP values of the transformed features back onto the original columns (one-hot → its column).

    ``values``: (rows, transformed features); returns (rows, columns) in ``features.columns`` order.
    """
    import numpy as np

    prepare = model.named_steps["prepare"]
    spans: list[tuple[int, int]] = []  # each column's slice of the transformed features
    if features.numeric:
        start = prepare.output_indices_["num"].start
        spans += [(start + i, start + i + 1) for i in range(len(features.numeric))]
    if features.categorical:
        onehot = prepare.named_transformers_["cat"].named_steps["onehot"]
        start = prepare.output_indices_["cat"].start
        infrequent = onehot.infrequent_categories_
        for i, categories in enumerate(onehot.categories_):
            rare = infrequent[i]
            width = len(categories) - (len(rare) - 1 if rare is not None else 0)
            spans.append((start, start + width))
            start += width
    out = np.zeros((values.shape[0], len(features.columns)))
    for position, (begin, end) in enumerate(spans):
        out[:, position] = values[:, begin:end].sum(axis=1)
    return out


def class_slice(values: np.ndarray, base: np.ndarray, class_index: int) -> tuple[np.ndarray, float]:
    """The (rows, features) values and the base for one class: what raises its output.

    A binary model with one output (boosting, logistic regression) gives the
    log-odds of the second class; for the first class the signs flip.
    """
    if values.ndim == 3:
        return values[:, :, class_index], float(base[class_index])
    sign = 1.0 if class_index == 1 else -1.0
    return sign * values, sign * float(base[0])


class BadTrainingData(ValueError):
    """Data a model cannot be trained on: ``field`` is the input to change, ``choices`` the closest valid ones."""

    def __init__(self, field: str, message: str, choices: list[str] | None = None) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.choices = choices or []


@dataclass
class Training:
    """What a model is trained on: the task, the features, and the rows that have a target."""

    task: Task
    features: Features
    x: pd.DataFrame
    y: pd.Series


def training_data(frame: pd.DataFrame, target: str, task: str = "auto", wanted: list[str] | None = None) -> Training:
    """Check ``frame`` can train a model of ``target`` and return what it is trained on.

    Raises BadTrainingData naming the input to change: an unknown target or feature
    (with the closest columns), a non-numeric regression target, no usable feature,
    too few rows with a target, a class with a single row.
    """
    columns = [str(c) for c in frame.columns]
    if target not in columns:
        raise BadTrainingData(
            "target",
            f"no column {target!r}; the dataset has {', '.join(columns[:20])}",
            closest(target, columns, limit=5),
        )
    for column in wanted or []:
        if column not in columns or column == target:
            reason = "is the target" if column == target else "is not a column"
            raise BadTrainingData("features", f"{column!r} {reason}", closest(column, columns, limit=5))
    y = frame[target]
    kept = y.notna().to_numpy()
    chosen = Task(task) if task != "auto" else detect_task(y)
    if chosen is Task.REGRESSION and not is_number(y):
        sample = ", ".join(repr(v) for v in y.dropna().astype(str).unique()[:3])
        raise BadTrainingData(
            "task",
            f"regression needs a numeric target; {target!r} holds text ({sample}); use task classification, "
            "or convert the column to numbers with query (save_as) first",
            ["classification"],
        )
    if int(kept.sum()) < MIN_ROWS:
        raise BadTrainingData(
            "dataset", f"{int(kept.sum())} row(s) have a {target!r}; training needs at least {MIN_ROWS}"
        )
    features = choose_features(frame, target, wanted)
    if not features.columns:
        why = "; ".join(f"{c}: {r}" for c, r in features.skipped.items()) or "the dataset has only the target"
        raise BadTrainingData("features", f"no usable feature column ({why})")
    y = y[kept]
    if chosen is Task.CLASSIFICATION:
        y = y.astype(str) if not is_number(y) else y
        counts = y.value_counts()
        if len(counts) < 2:
            raise BadTrainingData("target", f"{target!r} has a single value ({counts.index[0]!r}); nothing to learn")
        lonely = [str(v) for v in counts[counts < MIN_PER_CLASS].index[:5]]
        if lonely:
            raise BadTrainingData(
                "target",
                f"class(es) {', '.join(lonely)} of {target!r} have fewer than {MIN_PER_CLASS} rows; "
                "drop or merge them with query (save_as) first",
            )
    x = inputs_of(frame[kept], features).reset_index(drop=True)
    return Training(chosen, features, x, y.reset_index(drop=True))


def closest(wanted: str, names: list[str], limit: int = 5) -> list[str]:
    """The names most like ``wanted`` (by spelling), best first."""
    import difflib

    return difflib.get_close_matches(wanted, names, n=limit, cutoff=0.3)


def for_comparison(training: Training) -> Training:
    """``training`` itself, or a seeded sample of MAX_CV_ROWS of its rows (stratified for classes)."""
    if len(training.x) <= MAX_CV_ROWS:
        return training
    from sklearn.model_selection import train_test_split

    stratify = training.y if training.task is Task.CLASSIFICATION else None
    x, _, y, _ = train_test_split(training.x, training.y, train_size=MAX_CV_ROWS, random_state=0, stratify=stratify)
    return Training(training.task, training.features, x.reset_index(drop=True), y.reset_index(drop=True))


def primary(task: Task) -> str:
    return METRICS[task][0]


def fold_scores(
    model: Pipeline, training: Training, report: Callable[[int, int], None] | None = None
) -> dict[str, dict[str, float]]:
    """Cross-validated figures of ``model`` (like sklearn's cross_validate on the same folds),
    calling ``report(done, total)`` after each fold."""
    import numpy as np
    from sklearn.base import clone
    from sklearn.metrics import get_scorer

    splitter = folds(training.task, len(training.x))
    splits = list(splitter.split(training.x, training.y))
    scorers = {metric: get_scorer(metric) for metric in METRICS[training.task]}
    found: dict[str, list[float]] = {metric: [] for metric in scorers}
    for done, (train, test) in enumerate(splits, start=1):
        fitted = clone(model).fit(training.x.iloc[train], training.y.iloc[train])
        for metric, scorer in scorers.items():
            found[metric].append(float(scorer(fitted, training.x.iloc[test], training.y.iloc[test])))
        if report:
            report(done, len(splits))
    figures = {}
    for metric, values in found.items():
        sign = -1.0 if metric.startswith("neg_") else 1.0
        figures[metric] = {"mean": float(sign * np.mean(values)), "std": float(np.std(values))}
    return figures
