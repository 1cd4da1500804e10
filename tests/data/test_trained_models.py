"""The predict tools on scikit-learn's bundled datasets, checked against scikit-learn called directly.

A model is trained as a job (run here by calling the job, as a worker would), scores
what the same pipeline scores under sklearn's own cross-validation on the same folds,
predicts what sklearn's fitted model predicts, and its SHAP contributions add up to
the model's own raw output. The file it is kept in cannot be swapped.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from datacatalog.store import ConversationCatalog
from registry.models import JobRun
from tests.conftest import OTHER_TENANT, TENANT, text
from tools.models import TrainedModel, TrainingStatus
from tools.trained_models import JOB_FUNCTION, run_training_job

pytestmark = pytest.mark.django_db(transaction=True)


def bundled(loader, **options) -> pd.DataFrame:
    frame = loader(as_frame=True, **options).frame
    frame.columns = [c.replace(" ", "_").replace("(", "").replace(")", "") for c in frame.columns]
    return frame


@pytest.fixture
def books(conversation):
    return ConversationCatalog(TENANT, conversation.id)


@pytest.fixture
def train(in_conversation):
    """train(**inputs): call train_model without waiting, then run its job as a worker would."""

    def run(**inputs):
        queued = in_conversation("train_model", wait_seconds=0, **inputs)
        assert queued.ok, queued.content
        row = TrainedModel.objects.filter(
            tenant_id=TENANT, name=inputs.get("name") or f"{inputs['target']}_model"
        ).first()
        assert run_training_job(row.pk) == TrainingStatus.READY, TrainedModel.objects.get(pk=row.pk).error
        return TrainedModel.objects.get(pk=row.pk)

    return run


def is_hint(result) -> bool:
    return result.error is None and result.content.startswith("⚠")


def cards_of(result, kind):
    return [card for card in result.cards if card["type"] == kind]


def test_a_regression_model_scores_and_predicts_as_scikit_learn_does(books, train, in_conversation):
    diabetes = bundled(load_diabetes)
    books.save("diabetes", diabetes, source="upload")
    x, y = diabetes.drop(columns="target"), diabetes.target

    model = train(dataset="diabetes", target="target", algorithm="linear", name="progression")

    reference = make_pipeline(StandardScaler(), Ridge(alpha=1.0))
    expected = cross_val_score(reference, x, y, cv=KFold(5, shuffle=True, random_state=0), scoring="r2")
    assert model.task == "regression" and model.rows == len(diabetes)
    assert model.metrics["r2"]["mean"] == pytest.approx(expected.mean(), abs=1e-9)
    result = in_conversation("predict", model="progression", dataset="diabetes", save_as="scored")
    assert result.ok, result.content
    scored = books.load("scored")
    assert np.allclose(scored.predicted_target, reference.fit(x, y).predict(x))


def test_without_an_algorithm_the_better_candidate_is_kept_and_recommended(books, train, in_conversation):
    books.save("diabetes", bundled(load_diabetes), source="upload")
    model = train(dataset="diabetes", target="target")

    scores = {c["algorithm"]: c["metrics"]["r2"]["mean"] for c in model.candidates}
    assert set(scores) == {"linear", "gradient_boosting"}
    assert model.algorithm == max(scores, key=scores.get)
    info = in_conversation("get_model_info", model="target_model")
    (results,) = cards_of(info, "training_results")
    (recommendation,) = cards_of(info, "model_recommendation")
    assert results["metrics"][0]["metric"] == "R²" and results["trained_rows"] == 442
    assert recommendation["recommended"] == model.algorithm
    assert [c["algorithm"] for c in recommendation["candidates"]][0] == model.algorithm
    assert "R² " in text(info) and "Features: age, sex, bmi" in text(info)


def test_past_the_comparison_limit_candidates_are_compared_on_a_sample_and_the_kept_one_fits_all(
    books, train, monkeypatch
):
    from tools.lib import modelling

    monkeypatch.setattr(modelling, "MAX_CV_ROWS", 200)
    books.save("diabetes", bundled(load_diabetes), source="upload")
    model = train(dataset="diabetes", target="target", algorithm="linear")
    assert (model.cv_rows, model.rows) == (200, 442)


def test_a_classifier_of_named_classes_matches_scikit_learn_and_explains_a_row(books, train, in_conversation):
    iris = bundled(load_iris)
    iris["species"] = np.array(["setosa", "versicolor", "virginica"])[iris.pop("target")]
    books.save("iris", iris, source="upload")
    x, y = iris.drop(columns="species"), iris.species

    model = train(dataset="iris", target="species", algorithm="linear", name="species")

    reference = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    assert model.task == "classification" and model.classes == ["setosa", "versicolor", "virginica"]
    assert model.metrics["accuracy"]["mean"] == pytest.approx(cross_val_score(reference, x, y, cv=folds).mean())
    reference.fit(x, y)
    flower = x.iloc[120].to_dict()
    predicted = in_conversation("predict", model="species", rows=[flower])
    assert predicted.ok and reference.predict(x.iloc[[120]])[0] in text(predicted)

    explained = in_conversation("explain_prediction", model="species", row=flower)
    (card,) = cards_of(explained, "shap_explanation")
    chosen = list(reference.classes_).index(card["prediction"])
    raw = reference.decision_function(x.iloc[[120]])[0][chosen]
    assert card["base_value"] + sum(c["contribution"] for c in card["contributions"]) == pytest.approx(raw, abs=1e-4)
    assert card["output"] == f"the log-odds of {card['prediction']}"


def test_a_boosted_binary_classifier_explains_rows_in_the_models_own_log_odds(books, train, in_conversation):
    cancer = bundled(load_breast_cancer)
    columns = ["mean_radius", "mean_texture", "mean_smoothness", "worst_area", "worst_concavity"]
    books.save("cancer", cancer, source="upload")
    train(dataset="cancer", target="target", features=columns, algorithm="gradient_boosting", name="tumour")

    reference = HistGradientBoostingClassifier(random_state=0).fit(cancer[columns], cancer.target)
    for index in (0, 19):  # one of each class: the first class's log-odds are the second's, negated
        explained = in_conversation("explain_prediction", model="tumour", dataset="cancer", row_index=index)
        (card,) = cards_of(explained, "shap_explanation")
        raw = reference.decision_function(cancer[columns].iloc[[index]])[0]
        sign = 1 if card["prediction"] == 1 else -1
        total = card["base_value"] + sum(c["contribution"] for c in card["contributions"])
        assert card["prediction"] == reference.predict(cancer[columns].iloc[[index]])[0]
        assert total == pytest.approx(sign * raw, abs=1e-3)
    overall = in_conversation("explain_prediction", model="tumour", dataset="cancer")
    (card,) = cards_of(overall, "shap_explanation")
    assert card["scope"] == "overall" and {c["feature"] for c in card["contributions"]} == set(columns)


def test_a_forest_explains_a_row_in_probabilities(books, train, in_conversation):
    iris = bundled(load_iris)
    books.save("iris", iris, source="upload")
    x = iris.drop(columns="target")
    train(dataset="iris", target="target", algorithm="random_forest", name="forest")

    forest = RandomForestClassifier(n_estimators=100, min_samples_leaf=2, random_state=0, n_jobs=1)
    reference = make_pipeline(StandardScaler(), forest).fit(x, iris.target)
    explained = in_conversation("explain_prediction", model="forest", dataset="iris", row_index=70)
    assert explained.ok, explained.content
    (card,) = cards_of(explained, "shap_explanation")
    probability = reference.predict_proba(x.iloc[[70]])[0][card["prediction"]]
    assert card["output"] == f"the probability of {card['prediction']}"
    total = card["base_value"] + sum(c["contribution"] for c in card["contributions"])
    assert total == pytest.approx(probability, abs=1e-6)


def test_categories_and_gaps_are_handled_and_versions_are_kept(books, train, in_conversation):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"size": rng.uniform(20, 200, 300), "district": rng.choice(["north", "south", "centre"], 300)})
    frame["price"] = frame["size"] * 3 + frame.district.map({"north": 50, "south": 0, "centre": 200})
    frame.loc[::10, "size"] = None
    books.save("homes", frame, source="upload")
    first = train(dataset="homes", target="price", name="prices")
    second = train(dataset="homes", target="price", name="prices", algorithm="linear")

    assert (first.version, second.version) == (1, 2)
    assert second.features == {"numeric": ["size"], "categorical": ["district"], "skipped": {}}
    listing = in_conversation("list_trained_models", all_versions=True)
    assert listing.ok and text(listing).count("prices") == 2, listing.content
    explained = in_conversation(
        "explain_prediction", model="prices", version=1, row={"size": 100, "district": "centre"}
    )
    (card,) = cards_of(explained, "shap_explanation")
    assert {c["feature"] for c in card["contributions"]} == {"size", "district"}
    found = in_conversation("find_model", query="what is the price of a home")
    assert found.ok and "prices" in text(found)


def test_bad_input_gets_a_hint_naming_the_fix(books, in_conversation):
    frame = bundled(load_diabetes)
    frame["label"] = np.where(frame.target > 140, "high", "low")
    books.save("diabetes", frame, source="upload")
    books.save("tiny", frame.head(8), source="upload")

    missing = in_conversation("train_model", dataset="diabetes", target="targte")
    assert is_hint(missing) and "target: no column 'targte'" in missing.content and "target" in missing.content
    wordy = in_conversation("train_model", dataset="diabetes", target="label", task="regression")
    assert is_hint(wordy) and "regression needs a numeric target" in wordy.content and "classification" in wordy.content
    few = in_conversation("train_model", dataset="tiny", target="target")
    assert is_hint(few) and "8 row(s)" in few.content and "at least 20" in few.content
    unknown = in_conversation("get_model_info", model="nothing_here")
    assert is_hint(unknown) and "no model 'nothing_here'" in unknown.content
    assert not TrainedModel.objects.exists()


def test_rows_without_the_models_columns_are_refused_with_the_columns_named(books, train, in_conversation):
    books.save("diabetes", bundled(load_diabetes), source="upload")
    train(dataset="diabetes", target="target", algorithm="linear", name="progression")
    result = in_conversation("predict", model="progression", rows=[{"age": 0.1, "bmi": 0.2}])
    assert is_hint(result) and "lacks the column(s) sex, bp" in result.content


def test_a_changed_model_file_is_refused(books, train, in_conversation, files_dir):
    books.save("diabetes", bundled(load_diabetes), source="upload")
    model = train(dataset="diabetes", target="target", algorithm="linear", name="progression")
    (path,) = files_dir.rglob(model.file_name)
    payload = bytearray(path.read_bytes())
    payload[len(payload) // 2] ^= 0xFF
    path.write_bytes(bytes(payload))
    result = in_conversation("predict", model="progression", dataset="diabetes")
    assert result.error and "changed since it was trained; refused" in result.content


def test_a_model_file_naming_an_untrusted_type_is_refused_even_with_its_hash(books, train, in_conversation, files_dir):
    import hashlib
    import os

    import skops.io
    from sklearn.preprocessing import FunctionTransformer

    books.save("diabetes", bundled(load_diabetes), source="upload")
    model = train(dataset="diabetes", target="target", algorithm="linear", name="progression")
    (path,) = files_dir.rglob(model.file_name)
    payload = skops.io.dumps(make_pipeline(FunctionTransformer(os.system), Ridge()))
    path.write_bytes(payload)
    TrainedModel.objects.filter(pk=model.pk).update(sha256=hashlib.sha256(payload).hexdigest())
    result = in_conversation("predict", model="progression", dataset="diabetes")
    assert result.error and "outside the allow-list" in result.content and "posix.system" in result.content


def test_a_model_file_is_read_and_checked_once_then_its_pipeline_is_kept_until_a_new_version(books, train):
    from tools.trained_models import load_pipeline

    books.save("diabetes", bundled(load_diabetes), source="upload")
    first = train(dataset="diabetes", target="target", algorithm="linear", name="progression")

    loaded = load_pipeline(first)

    assert load_pipeline(first) is loaded
    second = train(dataset="diabetes", target="target", algorithm="linear", name="progression")
    assert second.version == 2 and load_pipeline(second) is not loaded


def test_with_no_room_no_pipeline_is_kept(books, train, settings):
    from tools.trained_models import load_pipeline

    settings.EUNICE_MODEL_CACHE_MB = 0
    books.save("diabetes", bundled(load_diabetes), source="upload")
    model = train(dataset="diabetes", target="target", algorithm="linear", name="progression")
    assert load_pipeline(model) is not load_pipeline(model)


def test_the_least_recently_used_pipelines_go_first_once_their_files_pass_the_budget(settings):
    from tools.trained_models import _Kept

    settings.EUNICE_MODEL_CACHE_MB = 2
    kept, megabyte = _Kept(), 1024 * 1024
    a, b, c = object(), object(), object()
    kept.put(("a", "1"), a, megabyte)
    kept.put(("b", "1"), b, megabyte)
    assert kept.get(("a", "1")) is a  # a is now the more recently used

    kept.put(("c", "1"), c, megabyte)

    assert (kept.get(("a", "1")), kept.get(("b", "1")), kept.get(("c", "1"))) == (a, None, c)
    kept.put(("huge", "1"), object(), 3 * megabyte)  # larger than the whole budget: not kept
    assert kept.get(("huge", "1")) is None and kept.get(("a", "1")) is a


def test_another_tenants_models_are_not_found(books, train, in_conversation, call):
    books.save("diabetes", bundled(load_diabetes), source="upload")
    train(dataset="diabetes", target="target", algorithm="linear", name="progression")
    assert is_hint(call("get_model_info", tenant=OTHER_TENANT, model="progression"))
    assert "progression" not in text(call("list_trained_models", tenant=OTHER_TENANT))
    assert is_hint(call("find_model", tenant=OTHER_TENANT, query="progression target"))


def test_train_model_waits_for_the_job_and_relays_its_progress(books, in_conversation):
    books.save("diabetes", bundled(load_diabetes), source="upload")
    heard: list[tuple[str, float | None]] = []

    def worker():  # stands in for a django-q2 worker: runs the first queued job
        from registry.background import run_job

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            run = JobRun.objects.filter(func=JOB_FUNCTION).first()
            if run is not None:
                run_job(run.pk)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=worker)
    thread.start()
    result = in_conversation(
        "train_model",
        dataset="diabetes",
        target="target",
        wait_seconds=60,
        context={"progress": lambda message, fraction=None: heard.append((message, fraction))},
    )
    thread.join(timeout=30)
    assert result.ok, result.content
    assert "Cross-validated: R²" in text(result)
    assert {c["type"] for c in result.cards} == {"training_results", "model_recommendation"}
    assert heard and all(0 <= (fraction or 0) <= 1 for _, fraction in heard)


def test_a_training_whose_worker_died_starts_over_then_fails_with_the_reason(books, in_conversation, settings):
    import subprocess
    import sys

    from registry.background import HOST, reap_lost_runs

    books.save("diabetes", bundled(load_diabetes), source="upload")
    assert in_conversation("train_model", dataset="diabetes", target="target", wait_seconds=0).ok
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    model = TrainedModel.objects.get()

    def worker_dies_during(attempt: int) -> TrainedModel:
        JobRun.objects.filter(func=JOB_FUNCTION).update(status="running", host=HOST, pid=dead_pid, attempts=attempt)
        TrainedModel.objects.filter(pk=model.pk).update(status=TrainingStatus.TRAINING, progress_pct=40)
        reap_lost_runs()
        return TrainedModel.objects.get(pk=model.pk)

    again = worker_dies_during(1)
    assert (again.status, again.progress_pct) == (TrainingStatus.QUEUED, 0)
    last = worker_dies_during(settings.EUNICE_JOB_MAX_ATTEMPTS)
    assert last.status == TrainingStatus.FAILED
    info = text(in_conversation("get_model_info", model="target_model"))
    assert "failed: training stopped: its worker died" in info
