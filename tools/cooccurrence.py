"""build_co_occurrence: which terms or entities turn up together, across rows or passages.

A unit is one row of a dataset (its text columns joined) or one passage of a
corpus. The vocabulary is the terms the caller names, the tenant's recorded
entities (each matched by its name or any alias), or else the most frequent
words and two-word phrases (scikit-learn's ``CountVectorizer``, English stop
words left out). Two terms co-occur when one unit holds both; the matrix is
saved as a dataset in long form (one row per pair) and drawn as a heatmap.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from registry.context import ToolContext
from registry.contract import HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from tools.charts import VEGA_LITE_SCHEMA, chart_effects
from tools.datacommon import catalog, catalog_errors, table_ok
from tools.fragments import DATASET
from tools.lib.units import Units, corpus_passages, dataset_text, only_one_source

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

MAX_UNITS = 50_000
MAX_ENTITIES = 2_000
DEFAULT_SAVE_AS = "co_occurrence"


@uniform_contract(name="build_co_occurrence", is_tabular=True)
@catalog_errors
def build_co_occurrence(inputs: dict, context: ToolContext) -> Ok:
    """Count, for each pair of terms, the units holding both; save the pairs and draw a heatmap."""
    units = _units(inputs, context)
    books = catalog(context)
    terms, present = _vocabulary(inputs, context, units)
    if len(terms) < 2:
        raise HintException(
            "schema",
            f"terms: fewer than two of the terms occur in {units.source}; name other terms, or leave terms "
            "out to use the most frequent words",
        )
    pairs = _pairs(terms, present, inputs.get("min_count", 1))
    name = inputs.get("save_as", DEFAULT_SAVE_AS)
    books.save(name, pairs, source="tool", source_detail="build_co_occurrence")
    spec = heatmap(pairs, f"Co-occurrence in {units.source}")
    ok = table_ok(pairs, data=pairs.head(20))
    ok.effects = chart_effects(books, name, spec, source_tool="build_co_occurrence")
    top = pairs[pairs.term_a < pairs.term_b].head(5)
    strongest = "; ".join(f"{r.term_a} + {r.term_b}: {r.count}" for r in top.itertuples())
    ok.warnings.append(
        Warning(
            "info",
            f"{len(terms)} terms over {len(units.texts):,} unit(s) of {units.source}; saved as dataset "
            f"{name!r} (term_a, term_b, count, jaccard; the diagonal is each term's own count); "
            f"strongest pairs: {strongest or 'none'}",
        )
    )
    return ok


def _units(inputs: dict, context: ToolContext) -> Units:
    only_one_source(inputs)
    if inputs.get("corpus"):
        return corpus_passages(context, inputs["corpus"], MAX_UNITS)
    _, _, frame, units = dataset_text(context, inputs)
    if len(frame) > MAX_UNITS:
        raise HintException("schema", f"dataset: {len(frame):,} rows, more than {MAX_UNITS:,}; filter with query first")
    return units


def _vocabulary(inputs: dict, context: ToolContext, units: Units) -> tuple[list[str], np.ndarray]:
    """The terms kept (at most ``top_n``, most frequent first) and a units × terms 0/1 matrix."""
    top_n = inputs.get("top_n", 20)
    if inputs.get("terms"):
        return _matched(units, {term: [term] for term in inputs["terms"]}, top_n)
    if inputs.get("entities"):
        return _matched(units, _entity_names(context, inputs.get("entity_type")), top_n)
    return _frequent(units, top_n)


def _matched(units: Units, names: dict[str, list[str]], top_n: int) -> tuple[list[str], np.ndarray]:
    """Each name found (case-insensitively, as whole words) by itself or any of its aliases."""
    import numpy as np

    lowered = [text.lower() for text in units.texts]
    columns: dict[str, np.ndarray] = {}
    for name, aliases in names.items():
        pattern = re.compile(r"\b(?:" + "|".join(re.escape(a.lower()) for a in aliases) + r")\b")
        hits = np.fromiter((pattern.search(text) is not None for text in lowered), dtype=np.int32, count=len(lowered))
        if hits.any():
            columns[name] = hits
    kept = sorted(columns, key=lambda name: (-int(columns[name].sum()), name))[:top_n]
    matrix = np.column_stack([columns[name] for name in kept]) if kept else np.zeros((len(lowered), 0))
    return kept, matrix


def _entity_names(context: ToolContext, entity_type: str | None) -> dict[str, list[str]]:
    from tools.models import EntityAlias

    aliases = EntityAlias.objects.for_tenant(context.tenant_id).select_related("entity")
    if entity_type:
        aliases = aliases.filter(entity__entity_type=entity_type)
    names: dict[str, list[str]] = {}
    for alias in aliases.order_by("entity_id")[: MAX_ENTITIES * 4]:
        names.setdefault(alias.entity.name, [alias.entity.name]).append(alias.alias)
    if not names:
        kind = f" of type {entity_type!r}" if entity_type else ""
        raise HintException(
            "schema", f"entities: the tenant has no recorded entities{kind}; record_fact first, or pass terms"
        )
    return dict(list(names.items())[:MAX_ENTITIES])


def _frequent(units: Units, top_n: int) -> tuple[list[str], np.ndarray]:
    import numpy as np
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(
        binary=True, stop_words="english", ngram_range=(1, 2), max_features=top_n, token_pattern=r"(?u)\b[^\W\d_]{2,}\b"
    )
    try:
        matrix = vectorizer.fit_transform(units.texts)
    except ValueError:  # every unit empty or only stop words
        return [], np.zeros((len(units.texts), 0))
    terms = list(vectorizer.get_feature_names_out())
    order = sorted(range(len(terms)), key=lambda n: (-int(matrix[:, n].sum()), terms[n]))
    return [terms[n] for n in order], matrix[:, order].toarray()


def _pairs(terms: list[str], present: np.ndarray, min_count: int) -> pd.DataFrame:
    """One row per ordered pair (both orders: a heatmap is symmetric), strongest first."""
    import numpy as np
    import pandas as pd

    counts = present.T.astype(np.int64) @ present.astype(np.int64)
    own = np.diag(counts)
    rows = []
    for a, term_a in enumerate(terms):
        for b, term_b in enumerate(terms):
            count = int(counts[a, b])
            if count >= min_count or a == b:
                union = own[a] + own[b] - count
                rows.append((term_a, term_b, count, round(count / union, 4) if union else 0.0))
    frame = pd.DataFrame(rows, columns=["term_a", "term_b", "count", "jaccard"])
    return frame.sort_values(["count", "term_a", "term_b"], ascending=[False, True, True], ignore_index=True)


def heatmap(pairs: pd.DataFrame, title: str) -> dict:
    """A Vega-Lite heatmap of the pairs, terms in the order of their own counts."""
    import json

    own = pairs[pairs.term_a == pairs.term_b].sort_values("count", ascending=False)
    order = own.term_a.tolist()
    axis = {"type": "nominal", "sort": order}
    return {
        "$schema": VEGA_LITE_SCHEMA,
        "title": title[:200],
        "data": {"values": json.loads(pairs.to_json(orient="records"))},
        "mark": {"type": "rect", "tooltip": True},
        "encoding": {
            "x": {"field": "term_a", "title": "term", **axis},
            "y": {"field": "term_b", "title": "term", **axis},
            "color": {"field": "count", "type": "quantitative", "title": "units with both"},
        },
        "width": 600,
        "height": 600,
    }


TOOLS = (
    Tool(
        name="build_co_occurrence",
        description=(
            "Find which terms, keywords or entities appear together: counts, for every pair, the "
            "dataset rows (text columns) or corpus passages that mention both. Give the terms, use "
            "the tenant's recorded entities, or let it pick the most frequent words. Saves the "
            "pair counts as a dataset and shows a heatmap."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "dataset": DATASET,
                "columns": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "description": "Text columns to read, joined per row (default: every text column).",
                },
                "corpus": {"type": "string", "minLength": 1, "description": "A corpus to read passage by passage."},
                "terms": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": 200},
                    "minItems": 2,
                    "maxItems": 200,
                    "uniqueItems": True,
                    "description": "The terms to count, matched as whole words in any case.",
                },
                "entities": {
                    "type": "boolean",
                    "default": False,
                    "description": "Count the tenant's recorded entities (by name or alias) instead of words.",
                },
                "entity_type": {"type": "string", "minLength": 1, "maxLength": 64},
                "top_n": {"type": "integer", "minimum": 2, "maximum": 60, "default": 20},
                "min_count": {"type": "integer", "minimum": 1, "default": 1},
                "save_as": {**DATASET, "description": "Name of the pairs dataset (default co_occurrence)."},
            },
            "additionalProperties": False,
        },
        handler=build_co_occurrence,
        category="data",
        status_message="Counting what occurs together",
        timeout_seconds=120,
    ),
)
