"""Turning whatever a handler produced into an envelope, and measuring schemas.

Row-count rules for results that carry no table (a deliberate choice the spec
leaves open): text is one record, so a non-empty string counts as 1 row and an
empty one as 0; None is 0 rows; a dict is 1 row; any other object is 1 row.
Tables count their rows: DataFrame/Series length, list length.

pandas is never imported here: a DataFrame can only reach us if pandas is
already loaded, so we recognise one by its class's module and only then touch
the (already imported) package.
"""

from __future__ import annotations

import datetime as _dt
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from registry.contract_types import ColumnSpec, Effects, Envelope, Err, Hint, Ok, text_ok
from registry.result import ToolResult, looks_legacy

_ENVELOPE_TYPES = (Ok, Hint, Err)

# Legacy error strings with these prefixes were hints all along, written before
# Hint existed; everything else in ToolResult.error is a real failure.
_LEGACY_HINT_PREFIXES = (("schema hint:", "schema"), ("fetch hint:", "fetch"))

# ``scheme://user:password@host`` in a connection error must not reach the model.
_URL_CREDENTIALS = re.compile(r"(\b[a-zA-Z][\w+.-]*://[^/\s:@]*):[^@\s/]+@")

# Checked in order: bool before int and datetime before date, as each subclasses the next.
_PY_DTYPES: dict[type, str] = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    bytes: "bytes",
    _dt.datetime: "datetime",
    _dt.date: "date",
    list: "list",
    tuple: "list",
    dict: "dict",
}


def coerce_return(value: Any) -> Envelope:
    """Translate a handler's return value into an Ok, Hint or Err.

    Envelopes pass through. A ToolResult or legacy ``{"message", ...}`` dict is
    translated by its ``error``: a ``schema hint:`` / ``fetch hint:`` prefix makes
    a Hint of that kind, any other error an ``Err(err_kind="legacy")``, no error
    an Ok measured from the first dataset. Anything else becomes an Ok whose
    data is the value itself. Raises nothing of its own; a malformed legacy dict
    may raise what ``ToolResult.from_any`` raises.
    """
    cls = type(value)
    # Cheapest checks first: plain text and ToolResult are the common legacy returns.
    if cls is str:
        return text_ok(value)
    if cls is ToolResult:
        return from_tool_result(value)
    if cls in _ENVELOPE_TYPES:
        return value
    if value is None:
        return Ok(rows=0)
    if isinstance(value, ToolResult):
        return from_tool_result(value)
    if isinstance(value, _ENVELOPE_TYPES):
        return value
    if isinstance(value, dict) and looks_legacy(value):
        return from_tool_result(ToolResult.from_any(value))
    rows, schema = measure(value)
    return Ok(rows=rows, schema=schema, data=value)


def from_tool_result(result: ToolResult) -> Envelope:
    """Translate a ToolResult: see ``coerce_return`` for the rules."""
    if result.error is not None:
        return from_legacy_error(result.error, result.content)
    datasets = result.datasets
    if datasets:
        rows, schema = measure(next(iter(datasets.values())))
    else:
        rows, schema = (1 if result.content else 0), []
    effects = Effects(cards=result.cards, datasets=datasets, exports=result.exports, cost=result.cost)
    return Ok(rows=rows, schema=schema, data=result.content, effects=effects)


def from_legacy_error(error: object, content: str = "") -> Hint | Err:
    """Translate a legacy error string (and the content that came with it).

    Content that says more than the stock ``Error: <error>`` echo is kept below
    the message, so the model loses nothing it used to read.
    """
    error = str(error)
    stripped = error.strip()
    extra = content.strip()
    if extra in ("", stripped, f"Error: {error}".strip()):
        extra = ""
    lowered = stripped.lower()
    for prefix, hint_kind in _LEGACY_HINT_PREFIXES:
        if lowered.startswith(prefix):
            message = stripped[len(prefix) :].strip()
            return Hint(hint_kind, _join(message, extra))  # type: ignore[arg-type]
    return Err(message=_join(stripped or "(no message)", extra), err_kind="legacy")


def err_from_exception(exc: BaseException) -> Err:
    """An Err naming the exception's class; the message is ``str(exc)``, never a traceback.

    Passwords embedded in URLs (``postgres://app:secret@db``) are masked.
    """
    message = _URL_CREDENTIALS.sub(r"\1:***@", str(exc))
    return Err(message=message or "(no message)", err_kind=type(exc).__name__)


def measure(data: Any) -> tuple[int, list[ColumnSpec]]:
    """Return ``(rows, schema)`` for ``data``; see the module docstring for row rules.

    DataFrame, Series and lists are measured column by column; a dict is one
    row whose dtypes are inferred; text, None and other objects have no schema.
    Raises nothing for odd data: unhashable cells just leave ``distinct_count`` None.
    """
    if data is None:
        return 0, []
    if isinstance(data, str):
        return (1 if data else 0), []
    kind = pandas_kind(data)
    if kind == "DataFrame":
        # By position: duplicate column names would make data[name] a frame.
        return len(data), [
            _measure_series(data.iloc[:, position], str(column)) for position, column in enumerate(data.columns)
        ]
    if kind == "Series":
        return len(data), [_measure_series(data, "value" if data.name is None else str(data.name))]
    if isinstance(data, (list, tuple)):
        return len(data), _measure_sequence(data)
    if isinstance(data, Mapping):
        return 1, [_infer_scalar(str(key), value) for key, value in data.items()]
    return 1, []


def measure_schema(data: Any) -> list[ColumnSpec]:
    """The schema half of ``measure``: columns measured from ``data`` itself."""
    return measure(data)[1]


def pandas_kind(data: Any) -> str | None:
    """Return "DataFrame", "Series" or None for ``data``, without importing pandas."""
    cls = type(data)
    if not cls.__module__.startswith("pandas"):
        return None
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return None
    if isinstance(data, pandas.DataFrame):
        return "DataFrame"
    if isinstance(data, pandas.Series):
        return "Series"
    return None


def _measure_series(series: Any, name: str) -> ColumnSpec:
    try:
        distinct: int | None = int(series.nunique(dropna=True))
    except TypeError:  # unhashable cells (lists, dicts) cannot be counted
        distinct = None
    return ColumnSpec(
        name=name,
        dtype=str(series.dtype),
        null_count=int(series.isna().sum()),
        distinct_count=distinct,
    )


def _measure_sequence(items: list | tuple) -> list[ColumnSpec]:
    if not items:
        return []
    if all(isinstance(item, Mapping) for item in items):
        return _measure_records(items)
    return [_measure_column("value", items, len(items))]


def _measure_records(records: Iterable[Mapping[str, Any]]) -> list[ColumnSpec]:
    # Columns are the union of keys in first-seen order; a missing key counts as null.
    columns: dict[str, list[Any]] = {}
    total = 0
    for record in records:
        total += 1
        for key, value in record.items():
            columns.setdefault(str(key), []).append(value)
    return [_measure_column(name, values, total) for name, values in columns.items()]


def _measure_column(name: str, values: Iterable[Any], total: int) -> ColumnSpec:
    dtypes: set[str] = set()
    distinct: set[Any] | None = set()
    present = 0
    for value in values:
        if value is None:
            continue
        present += 1
        dtypes.add(_py_dtype(value))
        if distinct is not None:
            try:
                distinct.add(value)
            except TypeError:
                distinct = None
    return ColumnSpec(
        name=name,
        dtype=_combine_dtypes(dtypes),
        null_count=total - present,
        distinct_count=None if distinct is None else len(distinct),
    )


def _infer_scalar(name: str, value: Any) -> ColumnSpec:
    dtype = "null" if value is None else _py_dtype(value)
    return ColumnSpec(name=name, dtype=dtype, dtype_provenance="inferred")


def _py_dtype(value: Any) -> str:
    cls = type(value)
    known = _PY_DTYPES.get(cls)
    if known is not None:
        return known
    for base, label in _PY_DTYPES.items():
        if isinstance(value, base):
            return label
    return cls.__name__


def _combine_dtypes(dtypes: set[str]) -> str:
    if not dtypes:
        return "null"
    if len(dtypes) == 1:
        return next(iter(dtypes))
    if dtypes == {"int", "float"}:
        return "float"
    return "mixed"


def _join(message: str, extra: str) -> str:
    return f"{message}\n{extra}" if extra else message
