"""Trained models: queueing a training job, running it, keeping and loading the fitted pipeline.

A model is a tenant's name with numbered versions (``TrainedModel`` rows); each
``train_model`` call queues a new version, which a django-q2 worker trains
(``run_training_job``: cross-validate each candidate fold by fold, reporting
progress on the row, then fit the best on every row). The fitted pipeline is kept
with skops (``skops.io``), not pickle: loading a skops file builds only the types it
is told to trust, so a file cannot run code when it is loaded. The file lives in
the tenant's catalog directory, which only the app writes; before loading, its
SHA-256 must match the row's and every type it names must be on ``TRUSTED_TYPES``
(what our pipelines hold beyond skops's own defaults), or it is refused.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from eunice.tenant_files import catalog_dir, safe_name
from registry import background
from tools.lib import modelling
from tools.lib.skops_io import skops_io
from tools.models import TrainedModel, TrainingStatus

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline

logger = logging.getLogger("eunice.trained_models")

JOB_FUNCTION = "tools.trained_models.run_training_job"
# Types beyond skops's defaults that our pipelines hold; anything else in a file is refused.
TRUSTED_TYPES = frozenset(
    {
        "numpy.dtype",
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",  # gradient boosting
        "sklearn.tree._tree.Tree",  # each tree of a random forest
    }
)
INTERNAL_ERROR = "training stopped on an internal error; the details are in the server log"
# Progress: cross-validation takes 5-85 %, the final fit 85-95 %, storing the rest.
CV_START, CV_END, FIT_END = 5, 85, 95
BACKGROUND_ROWS = 100


class ModelFileRefused(Exception):
    """A model file that is missing, changed since it was written, or names an untrusted type."""


def queue_training(
    *,
    tenant_id: str,
    conversation_id: str,
    name: str,
    dataset: str,
    target: str,
    task: str,
    requested: dict,
    user_id: str = "",
) -> TrainedModel:
    """Create the next version of model ``name`` and queue its training job; returns the row."""
    for _ in range(3):  # two calls may take the same version number: the loser takes the next
        try:
            with transaction.atomic():
                latest = TrainedModel.objects.for_tenant(tenant_id).filter(name=name).aggregate(v=Max("version"))["v"]
                row = TrainedModel.objects.create(
                    tenant_id=tenant_id,
                    name=name,
                    version=(latest or 0) + 1,
                    conversation_id=conversation_id,
                    dataset=dataset,
                    target=target,
                    task=task,
                    algorithm=requested.get("algorithm", "auto"),
                    requested=requested,
                    created_by=str(user_id or ""),
                )
                transaction.on_commit(functools.partial(background.enqueue, JOB_FUNCTION, row.pk, group="train_model"))
            return row
        except IntegrityError:
            continue
    raise IntegrityError(f"could not number a new version of model {name!r}")


def run_training_job(model_id: int) -> str:
    """The django-q2 task: train one queued model version. Returns its status."""
    claimed = TrainedModel.objects.filter(pk=model_id, status=TrainingStatus.QUEUED).update(
        status=TrainingStatus.TRAINING, progress_pct=1, stage="loading the dataset", updated_at=timezone.now()
    )
    if claimed != 1:
        return "not claimed"
    row = TrainedModel.objects.get(pk=model_id)
    try:
        with modelling.one_thread():
            _train(row)
    except modelling.BadTrainingData as exc:  # the dataset changed since the call checked it
        return _fail(model_id, str(exc))
    except Exception:
        # The job boundary: the row must not stay in training, and the traceback goes
        # to the log, never to the person who asked.
        logger.exception("training model %s failed", model_id)
        return _fail(model_id, INTERNAL_ERROR)
    return TrainingStatus.READY


def _train(row: TrainedModel) -> None:
    from datacatalog.store import ConversationCatalog

    frame = ConversationCatalog(row.tenant_id, row.conversation_id).load(row.dataset)
    training = modelling.training_data(
        frame, row.target, row.requested.get("task", "auto"), row.requested.get("features")
    )
    chosen = row.requested.get("algorithm", "auto")
    algorithms = modelling.AUTO_CANDIDATES if chosen == "auto" else (modelling.Algorithm(chosen),)
    compared = modelling.for_comparison(training)
    candidates: list[dict[str, Any]] = []
    span = (CV_END - CV_START) / len(algorithms)
    for n, algorithm in enumerate(algorithms):
        start = CV_START + n * span

        def report(done: int, total: int, start: float = start, algorithm: str = algorithm) -> None:
            _progress(row.pk, start + span * done / total, f"cross-validating {algorithm}: fold {done} of {total}")

        _progress(row.pk, start, f"cross-validating {algorithm}")
        model = modelling.pipeline(training.features, modelling.estimator(training.task, algorithm))
        candidates.append({"algorithm": str(algorithm), "metrics": modelling.fold_scores(model, compared, report)})
    metric = modelling.primary(training.task)
    best = max(candidates, key=lambda c: c["metrics"][metric]["mean"])
    _progress(row.pk, CV_END, f"fitting {best['algorithm']} on all {len(training.x):,} rows")
    fitted = modelling.pipeline(
        training.features, modelling.estimator(training.task, modelling.Algorithm(best["algorithm"]))
    ).fit(training.x, training.y)
    _progress(row.pk, FIT_END, "saving the model")
    file_name, digest = _store(row, fitted)
    classes = [_plain(c) for c in getattr(fitted[-1], "classes_", [])]
    features = {**vars(training.features)}
    sample = training.x.sample(min(BACKGROUND_ROWS, len(training.x)), random_state=0)
    TrainedModel.objects.filter(pk=row.pk, status=TrainingStatus.TRAINING).update(
        status=TrainingStatus.READY,
        progress_pct=100,
        stage="ready",
        task=training.task,
        algorithm=best["algorithm"],
        features=features,
        classes=classes,
        metrics=best["metrics"],
        candidates=candidates,
        background=json.loads(sample.to_json(orient="records")),
        rows=len(training.x),
        cv_rows=len(compared.x),
        file_name=file_name,
        sha256=digest,
        updated_at=timezone.now(),
    )


def _plain(value: object) -> object:
    """A class label as JSON: numpy numbers become Python ones."""
    return value.item() if hasattr(value, "item") else value


def _store(row: TrainedModel, fitted: Pipeline) -> tuple[str, str]:
    payload = skops_io().dumps(fitted)
    digest = hashlib.sha256(payload).hexdigest()
    file_name = f"{safe_name(row.name)}-v{row.version}-{digest[:12]}.skops"
    folder = catalog_dir(row.tenant_id, "models")
    partial = folder / f".{file_name}.partial"
    partial.write_bytes(payload)
    os.replace(partial, folder / file_name)
    return file_name, digest


def load_pipeline(row: TrainedModel) -> Pipeline:
    """The fitted pipeline of a ready model. Raises ModelFileRefused (missing, changed, untrusted types).

    A pipeline loaded and verified once is kept in this process (``_loaded``), under
    its file and the digest the row names: a random forest's file is tens of
    megabytes, and reading, hashing and building it took 200 ms a call. A new
    version has a new file and digest, so it is read and checked afresh."""
    path = catalog_dir(row.tenant_id, "models") / row.file_name
    key = (str(path), row.sha256)
    kept = _loaded.get(key)
    if kept is not None:
        return kept
    if not row.file_name or not path.is_file():
        raise ModelFileRefused(f"the file of model {row.name!r} v{row.version} is missing; train it again")
    payload = path.read_bytes()
    if hashlib.sha256(payload).hexdigest() != row.sha256:
        raise ModelFileRefused(f"the file of model {row.name!r} v{row.version} changed since it was trained; refused")
    skops = skops_io()
    named = set(skops.get_untrusted_types(data=payload))
    if named - TRUSTED_TYPES:
        raise ModelFileRefused(
            f"the file of model {row.name!r} v{row.version} holds types outside the allow-list "
            f"({', '.join(sorted(named - TRUSTED_TYPES))}); refused"
        )
    pipeline = skops.loads(payload, trusted=sorted(named))
    _loaded.put(key, pipeline, len(payload))
    return pipeline


class _Kept:
    """The pipelines most recently loaded, up to ``EUNICE_MODEL_CACHE_MB`` of their files
    together (the least recently used go first; a file larger than that is not kept).
    Shared by the tool workers' threads: a fitted pipeline is only read when it predicts."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, str], tuple[Pipeline, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Pipeline | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: tuple[str, str], pipeline: Pipeline, size: int) -> None:
        budget = settings.EUNICE_MODEL_CACHE_MB * 1024 * 1024
        with self._lock:
            if size > budget or key in self._entries:
                return
            self._entries[key] = (pipeline, size)
            self._bytes += size
            while self._bytes > budget:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped


_loaded = _Kept()


def _progress(model_id: int, percent: float, stage: str) -> None:
    TrainedModel.objects.filter(pk=model_id, status=TrainingStatus.TRAINING).update(
        progress_pct=min(99, int(percent)), stage=stage[:200], updated_at=timezone.now()
    )


def _fail(model_id: int, message: str) -> str:
    TrainedModel.objects.filter(pk=model_id, status=TrainingStatus.TRAINING).update(
        status=TrainingStatus.FAILED, error=message, stage="failed", updated_at=timezone.now()
    )
    logger.info("training model %s failed: %s", model_id, message)
    return TrainingStatus.FAILED


def _retry_lost(model_id: int) -> None:
    """The worker died mid-training: the version starts over."""
    TrainedModel.objects.filter(pk=model_id, status=TrainingStatus.TRAINING).update(
        status=TrainingStatus.QUEUED, progress_pct=0, stage="queued again", updated_at=timezone.now()
    )


def _fail_lost(reason: str, model_id: int) -> None:
    _fail(model_id, f"training stopped: {reason}")


background.on_lost(JOB_FUNCTION, retry=_retry_lost, fail=_fail_lost)
