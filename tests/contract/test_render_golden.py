"""The model-facing render of each envelope shape, locked byte for byte.

Each case's render (plus one trailing newline) must equal its file in
golden/. After a deliberate change to the render, rewrite the files with
``UPDATE_GOLDEN=1`` and review the diff like any other change.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from registry.contract import Envelope, Err, Hint, Ok, Warning, coerce_return, measure, render_envelope
from registry.result import ToolResult

GOLDEN = Path(__file__).parent / "golden"


def _ok_table() -> Envelope:
    records = [
        {"station": f"ST{n:03d}", "temp_c": round(10 + n * 0.5, 1), "flag": None if n % 4 else "qc"}
        for n in range(1, 24)
    ]
    rows, schema = measure(records)
    return Ok(rows=rows, schema=schema, data=records)


def _ok_dataframe() -> Envelope:
    frame = pd.DataFrame(
        {"median_income": [61_200, 58_900, None], "households": [1200, 845, 310]},
        index=pd.Index(["06037", "06059", "06073"], name="county_fips"),
    )
    rows, schema = measure(frame)
    return Ok(rows=rows, schema=schema, data=frame)


def _ok_with_warnings() -> Envelope:
    envelope = _ok_table()
    envelope.warnings = [
        Warning("geo_incoherence", "4 stations lie outside the requested bounding box", {"count": 4}),
        Warning("data_quality", "temp_c has no readings for 2024-02-29"),
    ]
    return envelope


def _ok_legacy_text() -> Envelope:
    frame = pd.DataFrame({"symbol": ["Na", "K"], "mass": [22.99, 39.10]})
    return coerce_return(ToolResult(content="Loaded 2 alkali metals into 'metals'.", datasets={"metals": frame}))


def _ok_record() -> Envelope:
    record = {"symbol": "Na", "name": "Sodium", "number": 11, "mass": 22.99, "radioactive": False}
    rows, schema = measure(record)
    return Ok(rows=rows, schema=schema, data=record)


def _hint_schema() -> Envelope:
    search_schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "corpus_id": {"type": "integer"},
            "mode": {"enum": ["fast", "deep"]},
        },
        "required": ["query"],
    }
    return Hint(
        "schema",
        "no column 'STATECODE' in table 'census_2020'",
        [
            {"label": "STATE_NAME", "score": 0.61},
            {"label": "STATE_CODE", "score": 0.92},
            {"label": "search_documents", "score": 0.35, "input_schema": search_schema},
        ],
    )


def _hint_fetch() -> Envelope:
    return Hint(
        "fetch",
        "source 'ais_positions' holds 12.4M rows; this query would return all of them",
        [{"label": "last 24 hours", "score": 0.9}, {"label": "one vessel by MMSI", "score": 0.7}],
        add="a time filter, e.g. start='2026-09-01T00:00Z', end='2026-09-02T00:00Z'",
    )


def _hint_fetch_narrow() -> Envelope:
    return Hint("fetch", "bounding box spans 3 continents", narrow="bbox to at most 10 degrees on a side")


def _hint_ambiguous() -> Envelope:
    return Hint(
        "ambiguous",
        "'Springfield' matches 2 places within tolerance",
        [
            {"label": "Springfield, Illinois (FIPS 17167)", "score": 0.81},
            {"label": "Springfield, Missouri (FIPS 29077)", "score": 0.8},
        ],
    )


def _err() -> Envelope:
    return Err("connection to the census API was refused", "ConnectionRefusedError")


def _err_legacy() -> Envelope:
    return coerce_return(ToolResult.failure("quota exceeded for this tenant"))


CASES: dict[str, Callable[[], Envelope]] = {
    "ok_table": _ok_table,
    "ok_dataframe": _ok_dataframe,
    "ok_with_warnings": _ok_with_warnings,
    "ok_legacy_text": _ok_legacy_text,
    "ok_record": _ok_record,
    "hint_schema": _hint_schema,
    "hint_fetch": _hint_fetch,
    "hint_fetch_narrow": _hint_fetch_narrow,
    "hint_ambiguous": _hint_ambiguous,
    "err": _err,
    "err_legacy": _err_legacy,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_matches_its_golden_file(case: str) -> None:
    rendered = (render_envelope(CASES[case]()) + "\n").encode("utf-8")
    path = GOLDEN / f"{case}.txt"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_bytes(rendered)
    assert path.exists(), f"no golden file {path.name}; run with UPDATE_GOLDEN=1 to create it, then review it"
    assert path.read_bytes() == rendered


def test_every_golden_file_has_a_case() -> None:
    # A stale snapshot would otherwise linger after its case was renamed.
    assert sorted(path.stem for path in GOLDEN.glob("*.txt")) == sorted(CASES)
