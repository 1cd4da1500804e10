"""What the data tools share: catalog errors as Hints, measured tables, data-quality warnings."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from datacatalog.store import CatalogError, ConversationCatalog, NoConversation, UnknownDataset
from registry.context import ToolContext
from registry.contract import Err, HintException, Ok, Warning, measure_schema

if TYPE_CHECKING:
    import pandas as pd


def catalog_errors(handler: Callable[[dict, ToolContext], Any]) -> Callable[[dict, ToolContext], Any]:
    """Turn catalog errors into the contract: unknown names and bad names are Hints the
    model can fix; a call outside a conversation is an Err (the platform's mistake)."""

    @functools.wraps(handler)
    def run(inputs: dict, context: ToolContext) -> Any:
        try:
            return handler(inputs, context)
        except UnknownDataset as exc:
            raise HintException("schema", str(exc), ranked(exc.alternatives)) from None
        except NoConversation as exc:
            return Err(str(exc), "NoConversation")
        except CatalogError as exc:
            raise HintException("schema", str(exc)) from None

    return run


def ranked(labels: list[str]) -> list[dict]:
    """Alternatives in the order given, scored so the ranking is kept."""
    return [{"label": label, "score": round(1.0 - i / 100, 2)} for i, label in enumerate(labels)]


def catalog(context: ToolContext) -> ConversationCatalog:
    return ConversationCatalog.for_context(context)


def chosen_dataset(context: ToolContext, inputs: dict) -> tuple[ConversationCatalog, str, pd.DataFrame]:
    """The catalog, the dataset named by ``inputs["dataset"]`` (or the default one) and its frame.

    Raises NoConversation or UnknownDataset.
    """
    books = catalog(context)
    name = books.resolve(inputs.get("dataset"))
    return books, name, books.load(name)


def check_columns(frame: pd.DataFrame, wanted: list[str], field: str) -> None:
    """Raise a schema Hint naming ``field`` and the closest real columns for any unknown column."""
    from datacatalog.store import closest

    names = [str(c) for c in frame.columns]
    for column in wanted:
        if column not in names:
            raise HintException(
                "schema",
                f"{field}: no column {column!r}; the dataset has {len(names)} column(s)",
                ranked(closest(column, names, limit=5)),
            )


def table_ok(
    frame: pd.DataFrame,
    *,
    rows: int | None = None,
    warnings: list[Warning] | None = None,
    effects: Any = None,
    data: Any = None,
) -> Ok:
    """An Ok whose schema is measured from ``frame`` (null and distinct counts included)."""
    ok = Ok(
        rows=len(frame) if rows is None else rows,
        schema=measure_schema(frame),
        data=frame if data is None else data,
        warnings=list(warnings or []),
    )
    if effects is not None:
        ok.effects = effects
    return ok


def quality_warnings(frame: pd.DataFrame) -> list[Warning]:
    """Data-quality advisories: no rows, wholly empty columns, duplicate rows."""
    if frame.empty:
        return [Warning("no_match", "the result has no rows")]
    found = []
    empty = [str(c) for c in frame.columns if frame[c].isna().all()]
    if empty:
        found.append(Warning("data_quality", f"column(s) with no values: {', '.join(empty[:10])}"))
    try:
        duplicates = int(frame.duplicated().sum())
    except TypeError:  # unhashable cells (lists, dicts) cannot be compared row by row
        duplicates = 0
    if duplicates:
        found.append(Warning("data_quality", f"{duplicates:,} duplicate row(s)"))
    return found
