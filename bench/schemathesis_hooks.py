"""What schemathesis cannot learn from the OpenAPI document: how to make a file of each type an upload takes.

The schema says an upload's ``file`` part is one of a list of media types (its
``encoding``); JSON Schema has no words for what a CSV or a Parquet file holds, so
each type gets a strategy here that draws small, well-formed files of it. Loaded by
bench/schemathesis.py through SCHEMATHESIS_HOOKS. Not application/json: a strategy for
it would replace every JSON body schemathesis makes, not only the upload's part.
"""

from __future__ import annotations

import io

import pandas as pd
import schemathesis
from hypothesis import strategies as st
from schemathesis.core.file_samples import FILE_SAMPLES

_columns = st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True), min_size=1, max_size=4, unique=True)
_cell = st.one_of(st.integers(-(10**6), 10**6), st.from_regex(r"[A-Za-z0-9 ]{0,12}", fullmatch=True))


@st.composite
def _frames(draw: st.DrawFn) -> pd.DataFrame:
    columns = draw(_columns)
    rows = draw(st.lists(st.tuples(*[_cell] * len(columns)), min_size=1, max_size=5))
    return pd.DataFrame(rows, columns=columns)


def _excel(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_excel(buffer, index=False)
    return buffer.getvalue()


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.astype(str).to_parquet(buffer, index=False)
    return buffer.getvalue()


_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=200)

for media_type, strategy in {
    "text/csv": _frames().map(lambda f: f.to_csv(index=False).encode()),
    "text/tab-separated-values": _frames().map(lambda f: f.to_csv(index=False, sep="\t").encode()),
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": _frames().map(_excel),
    "application/vnd.apache.parquet": _frames().map(_parquet),
    "text/plain": _text.map(str.encode),
    "text/markdown": _text.map(lambda t: f"# Notes\n\n{t}\n".encode()),
    "text/html": _text.map(lambda t: f"<html><body><p>{t}</p></body></html>".encode()),
    "application/pdf": st.just(FILE_SAMPLES["pdf"]),
}.items():
    schemathesis.openapi.media_type(media_type, strategy)
