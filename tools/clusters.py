"""discover_clusters: groups of similar rows or documents, found with k-means (scikit-learn).

Rows are compared on their numeric columns (each scaled to unit variance) or on
the meaning of their text columns; documents on the meaning of their title and
opening text. Meaning is the bundled embedding model's vector (the one search
uses, ``registry.retrieval.Embedder``): nothing is downloaded. Without ``k`` the
number of clusters with the best silhouette between 2 and ``MAX_AUTO_K`` is
taken. The rows come back with their cluster and a 2-D projection (PCA) as a
dataset, drawn as a scatter chart; each cluster is told by its size, the
members nearest its centre and what sets it apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from registry.context import ToolContext
from registry.contract import HintException, Ok, measure_schema, uniform_contract
from registry.declarations import Tool
from tools.charts import chart_effects, chart_spec
from tools.datacommon import catalog, catalog_errors, check_columns, chosen_dataset
from tools.fragments import DATASET
from tools.lib.units import Units, corpus_documents, is_text, joined_text, only_one_source

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

MAX_NUMERIC_ROWS = 20_000
# Texts are embedded on the call (~430 a second here): this many is under ten seconds.
MAX_TEXT_ROWS = 3_000
MAX_AUTO_K = 8
REPRESENTATIVES = 3
DEFAULT_SAVE_AS = "clusters"


@dataclass
class _Points:
    """What is clustered: one feature vector per member, how members are named, what the features mean."""

    source: str
    frame: pd.DataFrame  # the members, as saved (a cluster column is added)
    labels: list[str]
    features: np.ndarray
    numeric: list[str]  # the numeric columns the features are (empty for meaning)
    texts: list[str]


@uniform_contract(name="discover_clusters", is_tabular=True)
@catalog_errors
def discover_clusters(inputs: dict, context: ToolContext) -> Ok:
    """Cluster the rows or documents, save them with their cluster, and describe each cluster."""
    from sklearn.cluster import KMeans

    points = _from_corpus(inputs, context) if inputs.get("corpus") else _from_dataset(inputs, context)
    count = len(points.labels)
    if count < 3:
        raise HintException("schema", f"{points.source} has {count} member(s); clustering needs at least 3")
    k = inputs.get("k") or _best_k(points.features)
    if k >= count:
        raise HintException("schema", f"k: {k} clusters of {count} members; choose k below {count}")
    model = KMeans(n_clusters=k, n_init=10, random_state=0).fit(points.features)
    frame = _with_map(points, model.labels_)
    books = catalog(context)
    name = inputs.get("save_as", DEFAULT_SAVE_AS)
    books.save(name, frame, source="tool", source_detail="discover_clusters")
    summary = _summary(points, model)
    title = f"{k} clusters in {points.source}"
    spec = chart_spec(frame, name, {"x": "map_x", "y": "map_y", "color": "cluster", "mark": "point", "title": title})
    # The body is a list the model reads whole (a table preview would cut the members to 40 characters).
    lines = [
        (
            f"{count:,} member(s) of {points.source} in {k} clusters, largest first; saved as dataset {name!r} "
            "with columns cluster, map_x, map_y (a 2-D projection for plotting). A scatter chart is shown to the user."
        )
    ]
    for row in summary.itertuples():
        lines.append(f"- {row.cluster} ({row.size} members): {row.distinguished_by}; typical: {row.representatives}")
    return Ok(
        rows=k,
        schema=measure_schema(summary),
        data="\n".join(lines),
        effects=chart_effects(books, name, spec, source_tool="discover_clusters"),
    )


def _from_dataset(inputs: dict, context: ToolContext) -> _Points:
    import numpy as np

    _, name, frame = chosen_dataset(context, inputs)
    numeric = [str(c) for c in frame.columns if _is_number(frame[c])]
    columns = inputs.get("columns") or numeric or [str(c) for c in frame.columns if is_text(frame[c])]
    check_columns(frame, columns, "columns")
    chosen_numbers = [c for c in columns if c in numeric]
    if chosen_numbers and len(chosen_numbers) < len(columns):
        words = [c for c in columns if c not in numeric]
        raise HintException(
            "schema",
            f"columns: numbers ({', '.join(chosen_numbers)}) and text ({', '.join(words)}) cannot be clustered "
            "together; name only numeric columns or only text columns",
        )
    label = inputs.get("label_column")
    if label:
        check_columns(frame, [label], "label_column")
    labels = frame[label].astype(str).tolist() if label else [f"row {n}" for n in range(len(frame))]
    source = f"dataset {name!r}"
    if chosen_numbers:
        _check_size(len(frame), MAX_NUMERIC_ROWS, source)
        values = frame[columns].astype(float)
        kept = values.notna().all(axis=1).to_numpy()
        if not kept.all():
            raise HintException(
                "schema",
                f"columns: {int((~kept).sum()):,} row(s) of {source} have no value in {', '.join(columns)}; "
                "fill or drop them with query (save_as) first",
            )
        spread = values.std(ddof=0).replace(0, 1.0)
        features = ((values - values.mean()) / spread).to_numpy(dtype=np.float64)
        return _Points(source, frame, labels, features, columns, [])
    _check_size(len(frame), MAX_TEXT_ROWS, source)
    texts = joined_text(frame, columns)
    # Without a label column a text row is named by its own words, not by its number.
    labels = labels if label else [text[:80] for text in texts]
    return _Points(source, frame, labels, _meaning(texts), [], texts)


def _from_corpus(inputs: dict, context: ToolContext) -> _Points:
    import pandas as pd

    only_one_source(inputs)
    units: Units = corpus_documents(context, inputs["corpus"], MAX_TEXT_ROWS)
    frame = pd.DataFrame({"title": units.labels})
    return _Points(units.source, frame, units.labels, _meaning(units.texts), [], units.texts)


def _is_number(series: pd.Series) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


def _check_size(rows: int, limit: int, source: str) -> None:
    if rows > limit:
        raise HintException(
            "schema", f"dataset: {source} has {rows:,} rows; at most {limit:,} are clustered at once, sample first"
        )


def _meaning(texts: list[str]) -> np.ndarray:
    from registry.retrieval import Embedder

    return Embedder.default().embed(texts).astype("float64")


def _best_k(features: np.ndarray) -> int:
    """The k in 2..MAX_AUTO_K (below the member count) whose clustering has the best silhouette."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    best, best_score = 2, -1.0
    for k in range(2, min(MAX_AUTO_K, len(features) - 1) + 1):
        labels = KMeans(n_clusters=k, n_init=10, random_state=0).fit_predict(features)
        if len(set(labels)) < 2:
            continue
        score = float(silhouette_score(features, labels, random_state=0))
        if score > best_score:
            best, best_score = k, score
    return best


def _with_map(points: _Points, labels: np.ndarray) -> pd.DataFrame:
    from sklearn.decomposition import PCA

    frame = points.frame.reset_index(drop=True).copy()
    frame["cluster"] = [f"cluster {n + 1}" for n in labels]
    components = min(2, points.features.shape[1])
    projected = PCA(n_components=components, random_state=0).fit_transform(points.features)
    frame["map_x"] = projected[:, 0].round(4)
    frame["map_y"] = projected[:, 1].round(4) if components > 1 else 0.0
    return frame


def _summary(points: _Points, model) -> pd.DataFrame:  # noqa: ANN001 (a fitted KMeans)
    """One row per cluster, largest first: its size, the members nearest its centre, what marks it."""
    import numpy as np
    import pandas as pd

    marks = _numeric_marks(points, model.labels_) if points.numeric else _distinct_words(points.texts, model.labels_)
    rows = []
    for cluster, centre in enumerate(model.cluster_centers_):
        members = np.flatnonzero(model.labels_ == cluster)
        nearest = members[np.argsort(np.linalg.norm(points.features[members] - centre, axis=1))][:REPRESENTATIVES]
        rows.append(
            {
                "cluster": f"cluster {cluster + 1}",
                "size": len(members),
                "representatives": "; ".join(points.labels[n][:80] for n in nearest),
                "distinguished_by": marks[cluster],
            }
        )
    return pd.DataFrame(rows).sort_values(["size", "cluster"], ascending=[False, True], ignore_index=True)


def _numeric_marks(points: _Points, labels: np.ndarray) -> list[str]:
    """For each cluster, the columns whose mean is furthest from the whole's (in standard deviations)."""
    import numpy as np

    marks = []
    for cluster in range(labels.max() + 1):
        shift = points.features[labels == cluster].mean(axis=0)
        strongest = np.argsort(-np.abs(shift))[:2]
        described = (f"{'high' if shift[n] > 0 else 'low'} {points.numeric[n]} ({shift[n]:+.1f} sd)" for n in strongest)
        marks.append(", ".join(described))
    return marks


def _distinct_words(texts: list[str], labels: np.ndarray) -> list[str]:
    """For each cluster, the words that weigh most in its members' text against the others' (TF-IDF)."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(stop_words="english", token_pattern=r"(?u)\b[^\W\d_]{3,}\b", sublinear_tf=True)
    try:
        weights = vectorizer.fit_transform(texts)
    except ValueError:  # no word left
        return [""] * (labels.max() + 1)
    words = vectorizer.get_feature_names_out()
    marks = []
    for cluster in range(labels.max() + 1):
        inside = np.asarray(weights[labels == cluster].mean(axis=0)).ravel()
        outside = np.asarray(weights[labels != cluster].mean(axis=0)).ravel() if (labels != cluster).any() else 0
        marks.append(", ".join(words[n] for n in np.argsort(-(inside - outside))[:5]))
    return marks


TOOLS = (
    Tool(
        name="discover_clusters",
        description=(
            "Group similar rows of a dataset (by their numeric columns, or by the meaning of their "
            "text columns) or similar documents of a corpus into clusters, choosing the number of "
            "groups unless k is given. Returns each cluster's size, the most typical members and "
            "what sets it apart; saves every member with its cluster and shows a scatter chart."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "dataset": DATASET,
                "columns": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "description": "Only numeric or only text columns (default: every numeric column, "
                    "else every text column).",
                },
                "corpus": {"type": "string", "minLength": 1, "description": "Cluster this corpus's documents instead."},
                "k": {
                    "type": "integer",
                    "minimum": 2,
                    "maximum": 30,
                    "description": "Number of clusters (default: chosen).",
                },
                "label_column": {"type": "string", "description": "Column that names a row in the summary."},
                "save_as": {**DATASET, "description": "Name of the members dataset (default clusters)."},
            },
            "additionalProperties": False,
        },
        handler=discover_clusters,
        category="data",
        status_message="Looking for clusters",
        timeout_seconds=180,
    ),
)
