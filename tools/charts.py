"""Handlers of create_chart (Vega-Lite card + SVG/PNG export) and display_map (map_display card)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

from datacatalog.files import file_card, register_export
from registry.context import ToolContext
from registry.contract import Effects, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from tools.datacommon import catalog, catalog_errors, check_columns, chosen_dataset
from tools.fragments import DATASET
from tools.lib.geo import LAT_NAMES, LON_NAMES

if TYPE_CHECKING:
    import pandas as pd

    from datacatalog.store import ConversationCatalog

CHART_MAX_ROWS = 5000
MAP_MAX_POINTS = 5000
VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"


@uniform_contract(name="create_chart", is_tabular=False)
@catalog_errors
def create_chart(inputs: dict, context: ToolContext) -> Ok:
    """A Vega-Lite chart of a dataset as a card, plus the rendered image as a downloadable file."""
    books, name, frame = chosen_dataset(context, inputs)
    spec = chart_spec(frame, name, inputs)
    effects = chart_effects(books, name, spec, image_format=inputs.get("format", "svg"), source_tool="create_chart")
    return Ok(
        rows=len(frame),
        data=f"Chart {spec['title']!r} ({inputs.get('mark', 'bar')}) of {len(frame):,} rows "
        f"from {name!r} is shown to the user; image: {next(iter(effects.exports))}",
        effects=effects,
    )


def chart_spec(frame: pd.DataFrame, name: str, inputs: dict, field_prefix: str = "") -> dict:
    """The Vega-Lite spec of a chart of ``frame`` (dataset ``name``) as ``inputs`` describe it.

    Raises a Hint naming the field (after ``field_prefix``) for an unknown
    column, and one for a dataset too large to draw.
    """
    fields = [inputs["x"], inputs["y"], *([inputs["color"]] if inputs.get("color") else [])]
    check_columns(frame, [inputs["x"]], f"{field_prefix}x")
    check_columns(frame, [inputs["y"]], f"{field_prefix}y")
    check_columns(frame, fields[2:], f"{field_prefix}color")
    if len(frame) > CHART_MAX_ROWS:
        raise HintException(
            "fetch",
            f"{name!r} has {len(frame):,} rows; a chart takes at most {CHART_MAX_ROWS:,}",
            narrow="aggregate first with query (GROUP BY) and save_as, then chart that",
        )
    return vega_lite(frame[fields], inputs)


def chart_effects(
    books: ConversationCatalog, dataset: str, spec: dict, *, source_tool: str, image_format: str = "svg"
) -> Effects:
    """A chart card of ``spec`` (drawn from ``dataset``) and its rendered image as a downloadable file."""
    payload, mime = render(spec, image_format)
    export = register_export(
        books.tenant_id,
        books.conversation_id,
        f"{_slug(spec['title'])}.{image_format}",
        payload,
        mime,
        source_tool=source_tool,
    )
    card = {"type": "chart", "title": spec["title"], "dataset": dataset, "spec": spec}
    return Effects(cards=[card, file_card(export)], exports={export["original_filename"]: export})


def vega_lite(frame: pd.DataFrame, inputs: dict) -> dict:
    """The Vega-Lite spec with the data inline (no URL: the chart never fetches anything)."""
    encoding = {
        "x": {"field": inputs["x"], "type": _type(frame[inputs["x"]]), "title": inputs["x"]},
        "y": {"field": inputs["y"], "type": _type(frame[inputs["y"]]), "title": inputs["y"]},
    }
    if inputs.get("aggregate"):
        encoding["y"]["aggregate"] = inputs["aggregate"]
    if inputs.get("mark") == "point":  # a scatter plot spans its data, not zero to the data
        for axis in ("x", "y"):
            if encoding[axis]["type"] == "quantitative":
                encoding[axis]["scale"] = {"zero": False}
    if inputs.get("color"):
        encoding["color"] = {"field": inputs["color"], "type": "nominal"}
    return {
        "$schema": VEGA_LITE_SCHEMA,
        "title": inputs.get("title") or f"{inputs['y']} by {inputs['x']}",
        "data": {"values": json.loads(frame.to_json(orient="records", date_format="iso"))},
        "mark": {"type": inputs.get("mark", "bar"), "tooltip": True},
        "encoding": encoding,
        "width": 600,
        "height": 360,
    }


def render(spec: dict, image_format: str) -> tuple[bytes, str]:
    """SVG or PNG bytes of ``spec``, rendered locally by vl-convert (no network)."""
    import vl_convert

    if image_format == "png":
        return bytes(vl_convert.vegalite_to_png(spec, scale=2)), "image/png"
    return vl_convert.vegalite_to_svg(spec).encode(), "image/svg+xml"


def _type(series: pd.Series) -> str:
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(series):
        return "temporal"
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return "quantitative"
    return "nominal"


def _slug(title: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in title.lower()).strip("_")[:60] or "chart"


@uniform_contract(name="display_map", is_tabular=False)
@catalog_errors
def display_map(inputs: dict, context: ToolContext) -> Ok:
    """A map_display card: points from a dataset's coordinates or a GeoJSON object, as one layer.

    Calls with the same display_id add layers to one map (merged at the end of the response).
    """
    if inputs.get("geojson"):
        collection, name = _geojson(inputs["geojson"]), inputs.get("layer") or "geojson"
        warnings: list[Warning] = []
    else:
        books = catalog(context)
        name = books.resolve(inputs.get("dataset"))
        collection, warnings = _points(books.load(name), inputs)
    layer_id = inputs.get("layer") or name
    card = map_display_card(
        collection,
        layer_id=layer_id,
        display_id=inputs.get("display_id", "main"),
        style=inputs.get("style", "circle"),
        label=inputs.get("label_column"),
    )
    count = len(collection["features"])
    return Ok(
        rows=count,
        data=f"Map {card['display_id']!r}: layer {layer_id!r} with {count:,} feature(s)",
        warnings=warnings,
        effects=Effects(cards=[card]),
    )


def map_display_card(collection: dict, *, layer_id: str, display_id: str, style: str, label: str | None) -> dict:
    """A map_display card of one GeoJSON layer; cards with the same ``display_id`` merge into one map."""
    return {
        "type": "map_display",
        "display_id": display_id,
        "sources": [{"id": layer_id, "type": "geojson", "data": collection}],
        "layers": [{"id": layer_id, "source": layer_id, "type": style, "label": label}],
        "bounds": _bounds(collection),
    }


def _points(frame: pd.DataFrame, inputs: dict) -> tuple[dict, list[Warning]]:
    import pandas as pd

    columns = {str(c).lower(): str(c) for c in frame.columns}
    lat = inputs.get("lat_column") or next((columns[c] for c in LAT_NAMES if c in columns), None)
    lon = inputs.get("lon_column") or next((columns[c] for c in LON_NAMES if c in columns), None)
    if lat is None or lon is None:
        raise HintException(
            "schema",
            "no latitude/longitude columns found; pass lat_column and lon_column",
            [{"label": str(c), "score": 0.5} for c in frame.columns[:10]],
        )
    check_columns(frame, [lat, lon], "lat_column/lon_column")
    keep = frame[
        pd.to_numeric(frame[lat], errors="coerce").between(-90, 90)
        & pd.to_numeric(frame[lon], errors="coerce").between(-180, 180)
    ]
    warnings = []
    if len(keep) < len(frame):
        warnings.append(
            Warning("data_quality", f"{len(frame) - len(keep):,} row(s) without valid coordinates left out")
        )
    if keep.empty:
        warnings.append(Warning("no_match", "no row has valid coordinates"))
    keep = keep.head(MAP_MAX_POINTS)
    properties = [c for c in keep.columns if c not in (lat, lon)][:8]
    records = (
        json.loads(keep[properties].to_json(orient="records", date_format="iso")) if properties else [{}] * len(keep)
    )
    features = [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [float(x), float(y)]}, "properties": props}
        for x, y, props in zip(keep[lon], keep[lat], records, strict=True)
    ]
    return {"type": "FeatureCollection", "features": features}, warnings


def _geojson(value: dict) -> dict:
    if value.get("type") == "FeatureCollection" and isinstance(value.get("features"), list):
        return value
    if value.get("type") == "Feature":
        return {"type": "FeatureCollection", "features": [value]}
    raise HintException("schema", "geojson: expected a FeatureCollection or a Feature object")


def _bounds(collection: dict) -> list | None:
    """[[south, west], [north, east]] of every coordinate, or None for no features."""
    xs, ys = [], []

    def walk(coords: object) -> None:
        if (
            isinstance(coords, (list, tuple))
            and len(coords) >= 2
            and all(isinstance(v, (int, float)) for v in coords[:2])
        ):
            if math.isfinite(coords[0]) and math.isfinite(coords[1]):
                xs.append(coords[0])
                ys.append(coords[1])
        elif isinstance(coords, (list, tuple)):
            for item in coords:
                walk(item)

    for feature in collection.get("features", []):
        walk((feature.get("geometry") or {}).get("coordinates"))
    return [[min(ys), min(xs)], [max(ys), max(xs)]] if xs else None


# What a chart is drawn from; create_chart's inputs and a kit's charts (tools.kits).
CHART_PROPERTIES = {
    "dataset": DATASET,
    "x": {"type": "string", "minLength": 1},
    "y": {"type": "string", "minLength": 1},
    "color": {"type": "string"},
    "mark": {"type": "string", "enum": ["bar", "line", "point", "area"], "default": "bar"},
    "aggregate": {"type": "string", "enum": ["sum", "mean", "count", "min", "max", "median"]},
    "title": {"type": "string", "maxLength": 200},
}

TOOLS = (
    Tool(
        name="create_chart",
        description=(
            "Draw a chart of a dataset for the user (bar, line, point, area): pick the x and y "
            "columns, optionally a color column and an aggregate. The chart is shown in the chat "
            "and saved as an SVG or PNG file. Aggregate large data with query first."
        ),
        input_schema={
            "type": "object",
            "properties": {
                **CHART_PROPERTIES,
                "format": {"type": "string", "enum": ["svg", "png"], "default": "svg"},
            },
            "required": ["x", "y"],
            "additionalProperties": False,
        },
        handler=create_chart,
        category="outputs",
        status_message="Drawing the chart",
        timeout_seconds=60,
        input_examples=(
            {"dataset": "sales", "x": "month", "y": "revenue", "color": "region", "mark": "line", "aggregate": "sum"},
            {"dataset": "by_region", "x": "region", "y": "units", "title": "Units by region"},
        ),
    ),
    Tool(
        name="display_map",
        description=(
            "Show points on a map to the user, from a dataset with latitude/longitude columns or "
            "from a GeoJSON object. Calls with the same display_id add layers to the same map."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "dataset": DATASET,
                "geojson": {"type": "object", "description": "A FeatureCollection or Feature, instead of a dataset."},
                "lat_column": {"type": "string"},
                "lon_column": {"type": "string"},
                "label_column": {"type": "string"},
                "display_id": {"type": "string", "default": "main", "maxLength": 64},
                "layer": {"type": "string", "maxLength": 64},
                "style": {"type": "string", "enum": ["circle", "heatmap", "line", "fill"], "default": "circle"},
            },
            "additionalProperties": False,
        },
        handler=display_map,
        category="outputs",
        status_message="Preparing the map",
        timeout_seconds=30,
    ),
)
