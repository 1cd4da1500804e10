"""The predict tools: train a model on a dataset, look models up, predict and explain.

``train_model`` checks the data at once (a Hint names what to change), queues the
training as a django-q2 job (tools.trained_models) and waits up to ``wait_seconds``
for it, relaying the job's progress; a model not done by then is followed with
``get_model_info``. Models belong to the tenant: any conversation of the tenant
finds, uses and explains them by name (the latest version unless one is named).
Explanations are SHAP values (tools.lib.modelling) summed per original column.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, Warning, measure_schema, uniform_contract
from registry.declarations import Tool
from tools.datacommon import catalog, catalog_errors, chosen_dataset, ranked
from tools.fragments import DATASET
from tools.lib import modelling
from tools.model_cards import (
    columns_of,
    features_of,
    figure,
    overall_card,
    plain,
    recommendation_card,
    results_card,
    row_card,
    sampled,
    shown,
)
from tools.models import TrainedModel, TrainingStatus
from tools.trained_models import INTERNAL_ERROR, ModelFileRefused, load_pipeline, queue_training

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_WAIT_SECONDS = 60
POLL_SECONDS = 0.25
MAX_PREDICT_ROWS = 100_000
MAX_INLINE_ROWS = 1_000
MAX_EXPLAINED_ROWS = 500
MODEL_NAME = {
    "type": "string",
    "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$",
    "description": "The model's name.",
}
VERSION = {"type": "integer", "minimum": 1, "description": "A version of the model (default: the latest ready one)."}


@uniform_contract(name="train_model", is_tabular=False)
@catalog_errors
def train_model(inputs: dict, context: ToolContext) -> Ok | Err:
    """Check the data, queue the training job and wait for it (or hand back how to follow it)."""
    books, dataset, frame = chosen_dataset(context, inputs)
    requested = {key: inputs[key] for key in ("features", "task", "algorithm") if key in inputs}
    try:
        training = modelling.training_data(frame, inputs["target"], inputs.get("task", "auto"), inputs.get("features"))
    except modelling.BadTrainingData as exc:
        raise HintException("schema", str(exc), ranked(exc.choices)) from None
    name = inputs.get("name") or f"{_slug(inputs['target'])}_model"
    row = queue_training(
        tenant_id=context.tenant_id,
        conversation_id=books.conversation_id,
        name=name,
        dataset=dataset,
        target=inputs["target"],
        task=training.task,
        requested=requested,
        user_id=context.user_id,
    )
    row = _wait(row, inputs.get("wait_seconds", DEFAULT_WAIT_SECONDS), context)
    if row.status == TrainingStatus.READY:
        return _trained(row)
    if row.status == TrainingStatus.FAILED and row.error == INTERNAL_ERROR:
        return Err(f"training {name} v{row.version} failed: {row.error}", "TrainingFailed")
    if row.status == TrainingStatus.FAILED:  # the data changed under the job: a fix the model can make
        raise HintException("schema", f"training {name} v{row.version} failed: {row.error}")
    return Ok(
        rows=1,
        data=(
            f"Model {name} v{row.version} ({training.task} of {inputs['target']!r} on {len(training.x):,} rows) "
            f"is {row.status} ({row.progress_pct}%: {row.stage or 'waiting for a worker'}). "
            f'Follow it with get_model_info {{"model": "{name}", "version": {row.version}}}.'
        ),
    )


def _wait(row: TrainedModel, seconds: float, context: ToolContext) -> TrainedModel:
    """Poll the job's row until it is done, ``seconds`` pass or the call is cancelled, relaying its progress."""
    deadline = time.monotonic() + seconds
    reported = None
    while row.status not in (TrainingStatus.READY, TrainingStatus.FAILED) and time.monotonic() < deadline:
        if context.cancel is not None and context.cancel.cancelled:
            break
        if (row.progress_pct, row.stage) != reported:
            reported = (row.progress_pct, row.stage)
            context.progress(f"training {row.name}: {row.stage or 'queued'}", row.progress_pct / 100)
        time.sleep(POLL_SECONDS)
        row.refresh_from_db()
    return row


def _trained(row: TrainedModel) -> Ok:
    metric = modelling.primary(modelling.Task(row.task))
    figures = ", ".join(figure(m, f) for m, f in row.metrics.items())
    tried = "; ".join(f"{c['algorithm']} {c['metrics'][metric]['mean']:.3f}" for c in row.candidates)
    skipped = row.features.get("skipped") or {}
    warnings = [Warning("data_quality", f"column {c} not used: {why}") for c, why in skipped.items()]
    text = (
        f"Model {row.name} v{row.version}: {row.algorithm} {row.task} of {row.target!r} trained on {row.rows:,} rows "
        f"of {row.dataset!r} with {len(columns_of(row))} feature(s). Cross-validated{sampled(row)}: {figures}. "
        f"Candidates by {modelling.METRIC_LABELS[metric]}: {tried}. "
        "Use predict for new rows and explain_prediction for why."
    )
    return Ok(
        rows=1, data=text, warnings=warnings, effects=Effects(cards=[results_card(row), recommendation_card(row)])
    )


def _slug(text: str) -> str:
    import re

    return (re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "target")[:50].lower()


def model_row(context: ToolContext, name: str, version: int | None = None, *, ready: bool = True) -> TrainedModel:
    """The tenant's model ``name`` (a version, or the latest ready one). Raises a Hint naming the fix."""
    versions = TrainedModel.objects.for_tenant(context.tenant_id).filter(name=name)
    if not versions.exists():
        names = list(TrainedModel.objects.for_tenant(context.tenant_id).values_list("name", flat=True).distinct())
        raise HintException(
            "schema",
            f"model: no model {name!r} in this tenant ({len(names)} model(s); list_trained_models shows them)",
            ranked(modelling.closest(name, names)),
        )
    if version is not None:
        row = versions.filter(version=version).first()
        if row is None:
            known = [f"{name} v{v}" for v in versions.values_list("version", flat=True)]
            raise HintException("schema", f"version: {name} has no version {version}", ranked(known))
    else:
        row = versions.filter(status=TrainingStatus.READY).first() if ready else None
        row = row or versions.first()
    assert row is not None
    if ready and row.status != TrainingStatus.READY:
        detail = (
            f"failed: {row.error}" if row.status == TrainingStatus.FAILED else f"{row.status} ({row.progress_pct}%)"
        )
        raise HintException(
            "schema", f"{name} v{row.version} is {detail}; follow it with get_model_info or train it again"
        )
    return row


@uniform_contract(name="get_model_info", is_tabular=False)
def get_model_info(inputs: dict, context: ToolContext) -> Ok:
    """A model version's status and progress; once ready its figures, features and cards."""
    row = model_row(context, inputs["model"], inputs.get("version"), ready=False)
    if row.status == TrainingStatus.READY:
        ok = _trained(row)
        classes = f" Classes: {', '.join(map(str, row.classes[:20]))}." if row.classes else ""
        ok.data += f" Features: {', '.join(columns_of(row))}.{classes}"
        return ok
    if row.status == TrainingStatus.FAILED:
        return Ok(rows=1, data=f"Model {row.name} v{row.version} failed: {row.error}. Fix the data and train again.")
    return Ok(
        rows=1,
        data=f"Model {row.name} v{row.version} is {row.status}: {row.progress_pct}% ({row.stage or 'queued'}).",
    )


@uniform_contract(name="list_trained_models", is_tabular=True)
def list_trained_models(inputs: dict, context: ToolContext) -> Ok:
    """The tenant's models: each name's latest version, or every version."""
    import pandas as pd

    rows = TrainedModel.objects.for_tenant(context.tenant_id)
    if inputs.get("model"):
        rows = rows.filter(name=inputs["model"])
    seen: set[str] = set()
    table = []
    for row in rows.order_by("name", "-version"):
        if row.name in seen and not inputs.get("all_versions"):
            continue
        seen.add(row.name)
        table.append(_listing(row))
    frame = pd.DataFrame(
        table, columns=["name", "version", "status", "task", "target", "algorithm", "score", "dataset", "trained_at"]
    )
    warnings = [] if table else [Warning("no_match", "no trained models yet; train one with train_model")]
    return Ok(rows=len(frame), schema=measure_schema(frame), data=frame, warnings=warnings)


def _listing(row: TrainedModel) -> dict[str, Any]:
    score = ""
    if row.status == TrainingStatus.READY:
        metric = modelling.primary(modelling.Task(row.task))
        score = f"{modelling.METRIC_LABELS[metric]} {row.metrics[metric]['mean']:.3f}"
    return {
        "name": row.name,
        "version": row.version,
        "status": row.status,
        "task": row.task,
        "target": row.target,
        "algorithm": row.algorithm,
        "score": score,
        "dataset": row.dataset,
        "trained_at": row.updated_at.isoformat(timespec="seconds"),
    }


@uniform_contract(name="find_model", is_tabular=True)
@catalog_errors
def find_model(inputs: dict, context: ToolContext) -> Ok:
    """Ready models ranked by how well their name, target and features match the words asked
    (and, with a dataset, by how many of their features it has)."""
    import pandas as pd

    wanted = _words(inputs.get("query", ""))
    columns: set[str] = set()
    if inputs.get("dataset"):
        _, _, frame = chosen_dataset(context, inputs)
        columns = {str(c) for c in frame.columns}
    if not wanted and not columns:
        raise HintException("schema", "query: say what the model should predict (or name a dataset it should fit)")
    found = []
    latest: set[str] = set()
    for row in TrainedModel.objects.for_tenant(context.tenant_id).filter(status=TrainingStatus.READY):
        if row.name in latest or (inputs.get("task") and row.task != inputs["task"]):
            continue
        latest.add(row.name)
        about = _words(" ".join([row.name, row.target, row.dataset, *columns_of(row)]))
        target_words = _words(f"{row.name} {row.target}")
        score = float(len(wanted & about) + 2 * len(wanted & target_words))
        needed = set(columns_of(row))
        covered = len(needed & columns) / len(needed) if columns else 0.0
        score += 3 * covered
        if score > 0:
            found.append({**_listing(row), "features_in_dataset": f"{covered:.0%}" if columns else "", "match": score})
    if not found:
        raise HintException(
            "schema",
            "query: no ready model matches; list_trained_models shows every model, train_model makes one",
        )
    frame = pd.DataFrame(found).sort_values(["match", "name"], ascending=[False, True]).head(10)
    frame = frame.drop(columns=["match"]).reset_index(drop=True)
    return Ok(rows=len(frame), schema=measure_schema(frame), data=frame)


def _words(text: str) -> set[str]:
    import re

    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if len(w) > 1}


@uniform_contract(name="predict", is_tabular=True)
@catalog_errors
def predict(inputs: dict, context: ToolContext) -> Ok | Err:
    """Predictions of a model for a dataset's rows (saved as a dataset) or for rows given inline."""
    row = model_row(context, inputs["model"], inputs.get("version"))
    frame, source = _new_rows(inputs, context, row, MAX_PREDICT_ROWS)
    features = features_of(row)
    try:
        pipeline = load_pipeline(row)
    except ModelFileRefused as exc:
        return Err(str(exc), "ModelFileRefused")
    x = modelling.inputs_of(frame, features)
    out = frame.reset_index(drop=True).copy()
    column = f"predicted_{_slug(row.target)}"
    with modelling.one_thread():
        out[column] = pipeline.predict(x)
        if hasattr(pipeline[-1], "predict_proba"):
            out[f"{column}_probability"] = pipeline.predict_proba(x).max(axis=1).round(4)
    effects = Effects()
    text = f"{len(out):,} prediction(s) of {row.target!r} by {row.name} v{row.version} for {source}"
    if inputs.get("dataset") or inputs.get("save_as"):
        name = inputs.get("save_as") or f"{row.name}_predictions"
        catalog(context).save(name, out, source="tool", source_detail="predict")
        effects.datasets[name] = out
        text += f"; saved as dataset {name!r} with column {column}"
    ok = Ok(rows=len(out), schema=measure_schema(out), data=out, effects=effects)
    ok.warnings.append(Warning("info", text))
    return ok


def _new_rows(inputs: dict, context: ToolContext, row: TrainedModel, limit: int) -> tuple[pd.DataFrame, str]:
    """The rows to predict or explain (given inline, or a dataset's); checks the model's columns are there."""
    import pandas as pd

    if "rows" in inputs:
        frame, source = pd.DataFrame.from_records(inputs["rows"]), "the rows given"
    else:
        _, name, frame = chosen_dataset(context, inputs)
        source = f"dataset {name!r}"
    if len(frame) > limit:
        raise HintException("schema", f"dataset: {source} has {len(frame):,} rows; at most {limit:,} at once")
    missing = [c for c in columns_of(row) if c not in frame.columns]
    if missing:
        raise HintException(
            "schema",
            f"{source} lacks the column(s) {', '.join(missing)} that {row.name} v{row.version} was trained on "
            f"(it needs {', '.join(columns_of(row))})",
            ranked(modelling.closest(missing[0], [str(c) for c in frame.columns])),
        )
    return frame, source


@uniform_contract(name="explain_prediction", is_tabular=False)
@catalog_errors
def explain_prediction(inputs: dict, context: ToolContext) -> Ok | Err:
    """SHAP contributions per column: for one row (its prediction), or overall (mean |SHAP|) for a dataset."""
    import numpy as np
    import pandas as pd

    row = model_row(context, inputs["model"], inputs.get("version"))
    features = features_of(row)
    whole = inputs.get("row") is None and inputs.get("row_index") is None
    if inputs.get("row") is not None:
        frame, source = _new_rows({"rows": [inputs["row"]]}, context, row, 1)
    else:
        frame, source = _new_rows(inputs, context, row, MAX_PREDICT_ROWS)
        if not whole:
            index = inputs["row_index"]
            if index >= len(frame):
                raise HintException("schema", f"row_index: {source} has rows 0 to {len(frame) - 1}")
            frame, source = frame.iloc[[index]], f"row {index} of {source}"
        elif len(frame) > MAX_EXPLAINED_ROWS:
            frame, source = frame.sample(MAX_EXPLAINED_ROWS, random_state=0), f"{MAX_EXPLAINED_ROWS} rows of {source}"
    try:
        pipeline = load_pipeline(row)
    except ModelFileRefused as exc:
        return Err(str(exc), "ModelFileRefused")
    x = modelling.inputs_of(frame, features)
    background = modelling.inputs_of(pd.DataFrame.from_records(row.background), features)
    with modelling.one_thread():
        values, base = modelling.shap_values(pipeline, x, background)
        prediction = pipeline.predict(x)
    output = "the predicted value"
    if row.task == modelling.Task.CLASSIFICATION:
        # A forest's trees vote probabilities; boosting and logistic regression add log-odds.
        scale = "probability" if row.algorithm == modelling.Algorithm.RANDOM_FOREST else "log-odds"
        classes = list(pipeline[-1].classes_)
        chosen = classes.index(prediction[0]) if not whole else (1 if len(classes) == 2 else None)
        if chosen is None:  # overall, many classes: how much each column moves any class
            values, output = np.abs(values).sum(axis=2), f"the classes' {scale}"
        else:
            values, base_value = modelling.class_slice(values, base, chosen)
            base = np.array([base_value])
            output = f"the {scale} of {plain(classes[chosen])}"
    elif values.ndim == 3:
        values = values[:, :, 0]
    per_column = modelling.per_column(pipeline, values, features)
    if whole:
        card = overall_card(row, features, np.abs(per_column).mean(axis=0), source, output)
        top = ", ".join(f"{c['feature']} {c['importance']:.3g}" for c in card["contributions"][:5])
        text = f"Overall, for {source}, the columns that move {output} most (mean |SHAP|): {top}."
        return Ok(rows=len(frame), data=text, effects=Effects(cards=[card]))
    card = row_card(row, features, per_column[0], x.iloc[0], float(base[0]), prediction[0], output, source)
    top = "; ".join(f"{c['feature']}={c['value']} {c['contribution']:+.3g}" for c in card["contributions"][:5])
    text = (
        f"{row.name} v{row.version} predicts {shown(prediction[0])} for {source}. Starting from {output} "
        f"{card['base_value']:.4g} on average, the largest contributions (SHAP): {top}."
    )
    return Ok(rows=1, data=text, effects=Effects(cards=[card]))


def _model_inputs(**more: Any) -> dict:
    return {"type": "object", **more, "additionalProperties": False}


ROW = {
    "type": "object",
    "description": "One row as {column: value}, with every column the model was trained on.",
    "maxProperties": 500,
}

TOOLS = (
    Tool(
        name="train_model",
        description=(
            "Train a scikit-learn model that predicts one column of a dataset from its other columns. "
            "The task (classification or regression) is detected from the target; without an algorithm, "
            "linear and gradient-boosting models are compared by 5-fold cross-validation and the better "
            "one is kept. Runs as a background job; waits up to wait_seconds and returns the "
            "cross-validated figures, else how to follow it (get_model_info). Each call makes a new "
            "version of the named model, kept for the whole tenant."
        ),
        input_schema=_model_inputs(
            properties={
                "dataset": DATASET,
                "target": {"type": "string", "minLength": 1, "maxLength": 300, "description": "Column to predict."},
                "features": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "maxItems": 500,
                    "description": "Columns to predict from (default: every other usable column).",
                },
                "task": {"type": "string", "enum": ["auto", "classification", "regression"], "default": "auto"},
                "algorithm": {
                    "type": "string",
                    "enum": ["auto", *modelling.Algorithm],
                    "default": "auto",
                    "description": "auto compares linear and gradient_boosting; random_forest only when named.",
                },
                "name": {**MODEL_NAME, "description": "Name to keep the model under (default: <target>_model)."},
                "wait_seconds": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 120,
                    "default": DEFAULT_WAIT_SECONDS,
                    "description": "How long to wait for the job before returning (0: return at once).",
                },
            },
            required=["target"],
        ),
        handler=train_model,
        category="data",
        status_message="Training a model",
        timeout_seconds=150,
    ),
    Tool(
        name="get_model_info",
        description=(
            "A trained model's status (queued, training with progress, ready, failed), and once ready "
            "its task, target, features, classes, algorithm and cross-validated figures."
        ),
        input_schema=_model_inputs(properties={"model": MODEL_NAME, "version": VERSION}, required=["model"]),
        handler=get_model_info,
        category="data",
        status_message="Reading a model",
        timeout_seconds=15,
    ),
    Tool(
        name="predict",
        description=(
            "Predict with a trained model: for every row of a dataset (saved as a dataset with a "
            "predicted_<target> column, plus its probability for a classifier) or for rows given inline."
        ),
        input_schema=_model_inputs(
            properties={
                "model": MODEL_NAME,
                "version": VERSION,
                "dataset": DATASET,
                "rows": {"type": "array", "items": ROW, "minItems": 1, "maxItems": MAX_INLINE_ROWS},
                "save_as": {**DATASET, "description": "Dataset to save predictions as (default <model>_predictions)."},
            },
            required=["model"],
        ),
        handler=predict,
        category="data",
        status_message="Predicting",
        timeout_seconds=120,
    ),
    Tool(
        name="explain_prediction",
        description=(
            "Explain a trained model with SHAP values per column: why it predicts what it does for one row "
            "(row, or row_index of a dataset), or, with neither, which columns matter most over a dataset."
        ),
        input_schema=_model_inputs(
            properties={
                "model": MODEL_NAME,
                "version": VERSION,
                "dataset": DATASET,
                "row_index": {"type": "integer", "minimum": 0, "description": "The dataset's row to explain."},
                "row": ROW,
            },
            required=["model"],
        ),
        handler=explain_prediction,
        category="data",
        status_message="Explaining a prediction",
        timeout_seconds=120,
    ),
    Tool(
        name="list_trained_models",
        description="The tenant's trained models: each one's latest version (or all), status, task, target and score.",
        input_schema=_model_inputs(
            properties={
                "model": {**MODEL_NAME, "description": "Only this model."},
                "all_versions": {"type": "boolean", "default": False},
            },
        ),
        handler=list_trained_models,
        category="data",
        status_message="Listing models",
        timeout_seconds=15,
    ),
    Tool(
        name="find_model",
        description=(
            "Find a ready trained model by what it predicts (words of its name, target and features), "
            "and with a dataset by how many of its feature columns that dataset has."
        ),
        input_schema=_model_inputs(
            properties={
                "query": {"type": "string", "maxLength": 500, "description": "What the model should predict."},
                "dataset": DATASET,
                "task": {"type": "string", "enum": ["classification", "regression"]},
            },
        ),
        handler=find_model,
        category="data",
        status_message="Looking for a model",
        timeout_seconds=15,
    ),
)
