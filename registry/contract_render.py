"""The model-facing text of an envelope, and the reader for tools consuming it as data.

The rendering is the contract the model sees; tests/contract/golden locks it
byte for byte. Shapes:

* Ok: ``✓ ok. N rows.``, a schema line when there is a schema, one
  ``⚠ <kind>: <message>`` line per warning, then the data. Text data is shown
  whole: it is the handler's own words and content is never truncated. Tables
  (DataFrame, Series, lists) are shown as a bounded window of head and tail
  rows, labelled as a preview with the true row count and the elided rows
  marked; other data (dicts, objects) as JSON, labelled when cut.
* Hint: ``⚠ schema hint:`` / ``⚠ fetch hint:`` / ``⚠ ambiguous:`` and the message,
  the fetch hint's ``add:`` / ``narrow:`` lines, then the ranked alternatives.
* Err: ``✗ error (kind): message``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from registry.contract_coerce import pandas_kind
from registry.contract_types import ColumnSpec, Envelope, Err, Hint, Ok

OK_STATUS = "✓ ok."
PREVIEW_HEAD = 5
PREVIEW_TAIL = 5
PREVIEW_MAX_COLUMNS = 12
PREVIEW_MAX_CELL = 40
PREVIEW_MAX_CHARS = 2000

_HINT_LAYOUT = {
    "schema": ("⚠ schema hint: ", "did you mean:"),
    "fetch": ("⚠ fetch hint: ", "options:"),
    "ambiguous": ("⚠ ambiguous: ", "pick one:"),
}


def render_envelope(envelope: Envelope) -> str:
    """Return the text the model reads for ``envelope``; raise TypeError for a non-envelope."""
    if isinstance(envelope, Ok):
        return render_ok(envelope)
    if isinstance(envelope, Hint):
        return _render_hint(envelope)
    if isinstance(envelope, Err):
        return f"✗ error ({envelope.err_kind}): {envelope.message}"
    raise TypeError(f"not a contract envelope: {type(envelope).__name__}")


def content_for_data(text: str) -> str:
    """The part of a rendered result another tool should read as data.

    Strips the leading ``✓ ok.`` status line of an Ok render; Hint and Err text
    (and anything that is not a render) comes back unchanged, so a caller
    cannot mistake a failure for content.
    """
    if not text.startswith(OK_STATUS):
        return text
    newline = text.find("\n")
    return "" if newline < 0 else text[newline + 1 :]


def render_ok(ok: Ok) -> str:
    """The text the model reads for an Ok (``render_envelope`` of one)."""
    rows = ok.rows
    data = ok.data
    if type(data) is str and data and not ok.schema and not ok.warnings:
        # Most results: text alone (rendered as below, without the list of lines); for
        # one row or none, the status line and its newline are made once.
        head = _OK_HEADS.get(rows) if type(rows) is int else None
        if head is not None:
            return head + data
    status = _OK_STATUSES.get(rows) if type(rows) is int else None
    if status is None:
        status = f"{OK_STATUS} {_count(rows, 'row')}."
    lines = [status]
    if ok.schema:
        lines.append(_schema_line(ok.schema))
    lines.extend(f"⚠ {warning.kind}: {warning.message}" for warning in ok.warnings)
    body = _render_data(ok.data, ok.rows)
    if body:
        lines.append(body)
    return "\n".join(lines)


def _schema_line(schema: list[ColumnSpec]) -> str:
    all_inferred = all(column.dtype_provenance == "inferred" for column in schema)
    parts = []
    for column in schema:
        part = f"{column.name}:{column.dtype}"
        if column.null_count:
            part += f" ({column.null_count:,} null)"
        if column.dtype_provenance == "inferred" and not all_inferred:
            part += " (inferred)"
        parts.append(part)
    heading = "schema (inferred from a single row):" if all_inferred else "schema:"
    return f"{heading} {', '.join(parts)}"


def _render_data(data: Any, rows: int) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    kind = pandas_kind(data)
    if kind is not None:
        frame = data.to_frame("value" if data.name is None else data.name) if kind == "Series" else data
        return _frame_table(frame, rows)
    if isinstance(data, (list, tuple)):
        return _list_table(data, rows)
    return _bounded_text(data)


def _frame_table(frame: Any, rows: int) -> str:
    total = len(frame)
    head, tail = _window(total)
    columns = [str(column) for column in frame.columns]
    # A default RangeIndex is just row numbers; any other index carries meaning.
    with_index = type(frame.index).__name__ != "RangeIndex"
    if with_index:
        columns.insert(0, str(frame.index.name or "index"))
    shown = columns[:PREVIEW_MAX_COLUMNS]
    data_columns = len(shown) - with_index

    def cells(start: int, stop: int) -> list[list[Any]]:
        part = frame.iloc[start:stop, :data_columns]
        values = part.itertuples(index=with_index, name=None)
        return [list(row) for row in values]

    head_rows = cells(0, head)
    tail_rows = cells(total - tail, total) if tail else []
    return _table(shown, len(columns), head_rows, tail_rows, total, rows)


def _list_table(items: Sequence[Any], rows: int) -> str:
    total = len(items)
    head, tail = _window(total)
    shown_items = list(items[:head]) + (list(items[total - tail :]) if tail else [])
    if shown_items and all(isinstance(item, Mapping) for item in shown_items):
        columns: dict[str, None] = {}
        for item in shown_items:
            columns.update(dict.fromkeys(map(str, item)))
        names = list(columns)
        shown_names = names[:PREVIEW_MAX_COLUMNS]
        table = [[_get(item, name) for name in shown_names] for item in shown_items]
    else:
        names = ["value"]
        table = [[item] for item in shown_items]
    return _table(names[:PREVIEW_MAX_COLUMNS], len(names), table[:head], table[head:], total, rows)


def _get(item: Mapping[str, Any], name: str) -> Any:
    if name in item:
        return item[name]
    # Keys were stringified for the header; fall back to the original key.
    for key, value in item.items():
        if str(key) == name:
            return value
    return None


def _table(
    names: list[str],
    column_total: int,
    head_rows: list[list[Any]],
    tail_rows: list[list[Any]],
    total: int,
    rows: int,
) -> str:
    label = _preview_label(len(head_rows), len(tail_rows), total, len(names), column_total, rows)
    lines = [label] if label else []
    lines.append(" | ".join(_cell(name) for name in names))
    lines.extend(" | ".join(_cell(value) for value in row) for row in head_rows)
    if tail_rows:
        elided = total - len(head_rows) - len(tail_rows)
        lines.append(f"... ({_count(elided, 'more row')}) ...")
        lines.extend(" | ".join(_cell(value) for value in row) for row in tail_rows)
    return "\n".join(lines)


def _preview_label(head: int, tail: int, total: int, columns: int, column_total: int, rows: int) -> str:
    parts = []
    if tail:
        parts.append(f"first {head:,} and last {tail:,} of {_count(total, 'row')}")
    if columns < column_total:
        if not tail:
            parts.append(f"all {_count(total, 'row')}")
        parts.append(f"first {columns:,} of {column_total:,} columns")
    if total != rows:
        parts.append(f"the data holds {total:,} of the {rows:,} rows")
    return f"preview: {', '.join(parts)}" if parts else ""


def _window(total: int) -> tuple[int, int]:
    if total <= PREVIEW_HEAD + PREVIEW_TAIL:
        return total, 0
    return PREVIEW_HEAD, PREVIEW_TAIL


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "null"
    if isinstance(value, str):
        text = value
    elif isinstance(value, (dict, list, tuple)):
        text = _json(value)
    else:
        text = str(value)
    # One row per line: newlines and the column separator would break the table.
    text = text.replace("\n", "\\n").replace("|", "\\|")
    if len(text) > PREVIEW_MAX_CELL:
        text = text[: PREVIEW_MAX_CELL - 1] + "…"
    return text


def _bounded_text(data: Any) -> str:
    text = _json(data) if isinstance(data, Mapping) else str(data)
    if len(text) <= PREVIEW_MAX_CHARS:
        return text
    return f"preview: first {PREVIEW_MAX_CHARS:,} of {len(text):,} characters\n{text[:PREVIEW_MAX_CHARS]}…"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):  # circular or unserialisable keys
        return str(value)


def _render_hint(hint: Hint) -> str:
    opener, list_heading = _HINT_LAYOUT[hint.hint_kind]
    lines = [opener + hint.message]
    if hint.add is not None:
        lines.append(f"add: {hint.add}")
    if hint.narrow is not None:
        lines.append(f"narrow: {hint.narrow}")
    if hint.alternatives:
        lines.append(list_heading)
        for rank, alternative in enumerate(hint.alternatives, start=1):
            lines.append(f"  {rank}. {alternative['label']} (score {float(alternative['score']):.2f})")
            input_schema = alternative.get("input_schema")
            if input_schema is not None:
                lines.append(f"     input: {compact_input_schema(input_schema)}")
    return "\n".join(lines)


def compact_input_schema(schema: Any) -> str:
    """``{query: string, limit?: integer}`` from a JSON schema: enough to call it next turn."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return _json(schema)
    required = set(schema.get("required") or ())
    parts = []
    for name, prop in properties.items():
        marker = "" if name in required else "?"
        parts.append(f"{name}{marker}: {_json_type(prop)}")
    return "{" + ", ".join(parts) + "}"


def _json_type(prop: Any) -> str:
    if not isinstance(prop, Mapping):
        return "any"
    if "enum" in prop:
        return "|".join(_json(value) for value in prop["enum"])
    kind = prop.get("type", "any")
    if isinstance(kind, list):
        return "|".join(map(str, kind))
    if kind == "array" and isinstance(prop.get("items"), Mapping):
        return f"{_json_type(prop['items'])}[]"
    return str(kind)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


# The status line of most results (text: one row, or none), made once: ``{n:,}`` costs.
_OK_STATUSES = {rows: f"{OK_STATUS} {_count(rows, 'row')}." for rows in (0, 1)}
_OK_HEADS = {rows: f"{status}\n" for rows, status in _OK_STATUSES.items()}
