"""Handler of analyze_data: pandas code over the conversation's datasets, in the sandbox.

The code runs in a jailed, forked run (registry/sandbox); datasets go in as a
copy and tables come back as JSON data, which is rebuilt into DataFrames here.
New frames the code puts into ``frames`` are saved to the catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings

from datacatalog.access import is_staff
from datacatalog.store import NAME_RULE
from eunice.jsonlimits import loads_bounded
from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from registry.sandbox import service
from tools.datacommon import catalog, catalog_errors, quality_warnings, table_ok
from tools.fragments import DATASET

if TYPE_CHECKING:
    import pandas as pd


@uniform_contract(name="analyze_data", is_tabular=False)
@catalog_errors
def analyze_data(inputs: dict, context: ToolContext) -> Ok | Err:
    """Run the code; a table result is an Ok with a measured schema, text an Ok of text."""
    if settings.DATA["ANALYZE_DATA_FOR"] == "staff" and not is_staff(context):
        return Err("analyze_data runs code and is limited to staff here (EUNICE_ANALYZE_DATA_FOR)", "PermissionDenied")
    books = catalog(context)
    frames = books.load_all()
    default = books.resolve(inputs.get("dataset")) if frames else None
    if default is not None and default not in frames:
        books.entry(default)  # raises UnknownDataset with the closest names
    outcome = service.run_analysis(inputs["code"], frames.get(default) if default else None, frames, context)
    if not outcome.ok:
        return refused_run(outcome)
    answer = outcome.answer or {}
    saved, warnings = _save_frames(books, answer.get("frames") or {})
    effects = Effects(datasets=saved)
    if "frame" in answer:
        table = rebuild(answer["frame"])
        return table_ok(table, warnings=warnings + quality_warnings(table), effects=effects)
    text = answer.get("text") or ""
    if not text and not saved:
        raise HintException("schema", "the code set no `result` and saved no frame; assign the answer to `result`")
    return Ok(rows=1 if text else 0, data=text or None, warnings=warnings, effects=effects)


def refused_run(outcome: Any) -> Err:
    layer = outcome.stopped_by or "tool"
    if layer in ("language", "tool"):
        # The model's code failed or broke a rule: a correction it can make.
        raise HintException("schema", f"the code failed: {outcome.error} [stopped by: {layer}]")
    return Err(f"{outcome.error} [stopped by: {layer}]", f"sandbox:{layer}")


def _save_frames(books: Any, payloads: dict[str, dict]) -> tuple[dict[str, pd.DataFrame], list[Warning]]:
    saved: dict[str, pd.DataFrame] = {}
    warnings = []
    for name, payload in payloads.items():
        if not NAME_RULE.match(name):
            warnings.append(Warning("not_saved", f"frame {name!r} is not a valid dataset name; not kept"))
            continue
        frame = rebuild(payload)
        books.save(name, frame, source="tool", source_detail="analyze_data")
        saved[name] = frame
        warnings.append(Warning("info", f"saved frame {name!r} ({len(frame):,} rows) as a dataset"))
    return saved, warnings


def rebuild(payload: dict) -> pd.DataFrame:
    """The DataFrame a run sent as JSON data (runner.frame_payload), with dates restored."""
    import pandas as pd

    split = loads_bounded(payload["split"], what="the frame a run sent")
    frame = pd.DataFrame(split["data"], columns=split["columns"])
    for column, dtype in (payload.get("dtypes") or {}).items():
        if column in frame.columns and dtype.startswith("datetime64"):
            frame[column] = pd.to_datetime(frame[column])
    return frame


TOOLS = (
    Tool(
        name="analyze_data",
        description=(
            "Run pandas code over this conversation's datasets in a sandbox, for what SQL cannot "
            "do (reshaping, statistics, time series). `df` is the chosen dataset, `frames[name]` "
            "every dataset, `pd` and `np` are available; assign the answer to `result`. Put new "
            "DataFrames into `frames['new_name']` to keep them as datasets. No imports or files."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "code": {"type": "string", "minLength": 1, "description": "Python using df, frames, pd, np."},
                "dataset": DATASET,
            },
            "required": ["code"],
            "additionalProperties": False,
        },
        handler=analyze_data,
        category="data",
        status_message="Analysing the data",
        timeout_seconds=60,
    ),
)
