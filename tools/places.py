"""Handlers of save_map (a map card and a map file) and geocode (place names to coordinates).

Both read and save datasets as the spatial tools do (tools.spatial, tools.lib.geo);
geocode asks the geocoder the deployment configured (tools.lib.geocoding).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from tools.charts import map_display_card
from tools.datacommon import catalog, catalog_errors
from tools.fragments import DATASET
from tools.lib.geo import CRS_FIELD, GEOMETRY_FIELD, WGS84
from tools.spatial import DISPLAY_ID, SAVE_AS, finish, load, save_name

if TYPE_CHECKING:
    from datacatalog.store import ConversationCatalog


@uniform_contract(name="geocode", is_tabular=True)
@catalog_errors
def geocode(inputs: dict, context: ToolContext) -> Ok | Err:
    """Coordinates of place names (a list, or a dataset's column), from the configured geocoder."""
    import geopandas as gpd
    import pandas as pd
    import shapely

    from tools.lib.geocoding import GeocoderUnavailable, configured_geocoder

    books = catalog(context)
    queries, base = _place_queries(books, inputs)
    geocoder = configured_geocoder()
    try:
        # Each distinct name is asked once: a column repeats its cities.
        answers = {query: geocoder.lookup(query, country=inputs.get("country")) for query in dict.fromkeys(queries)}
    except GeocoderUnavailable as exc:
        return Err(str(exc), "GeocoderUnavailable")
    missed = [query for query, place in answers.items() if place is None]
    rows = [_place_row(query, answers[query]) for query in queries]
    found = pd.DataFrame(rows)
    table = pd.concat([base.reset_index(drop=True), found], axis=1) if base is not None else found
    located = table["lat"].notna()
    shapes = shapely.points(table["lon"].to_numpy(dtype=float), table["lat"].to_numpy(dtype=float))
    shapes[~located.to_numpy()] = None
    points = gpd.GeoDataFrame(table, geometry=gpd.GeoSeries(shapes, crs=WGS84), crs=WGS84)
    warnings = [_missed_warning(missed, geocoder)] if missed else []
    return finish(
        books,
        points,
        name=save_name(inputs, "geocoded"),
        tool="geocode",
        inputs=inputs,
        warnings=warnings,
        summary=f"{int(located.sum()):,} of {len(table):,} place(s) found ({geocoder.name})",
    )


def _place_queries(books: ConversationCatalog, inputs: dict) -> tuple[list, Any]:
    from tools.datacommon import check_columns

    if inputs.get("places") and inputs.get("column"):
        raise HintException("schema", "give places or dataset+column, not both")
    if inputs.get("places"):
        return [str(place) for place in inputs["places"]], None
    if not inputs.get("column"):
        raise HintException(
            "schema", "places: give a list of place names (e.g. ['Oslo', 'Lyon, FR']), or dataset and column"
        )
    frame = books.load(books.resolve(inputs.get("dataset")))
    check_columns(frame, [inputs["column"]], "column")
    if len(frame) > GEOCODE_MAX_ROWS:
        raise HintException(
            "fetch",
            f"{len(frame):,} rows; geocode takes at most {GEOCODE_MAX_ROWS:,}",
            narrow="geocode the distinct names first (query with SELECT DISTINCT … save_as)",
        )
    return frame[inputs["column"]].fillna("").astype(str).tolist(), frame.drop(
        columns=[c for c in ("lat", "lon") if c in frame.columns]
    )


GEOCODE_MAX_ROWS = 5000


def _place_row(query: Any, place: Any) -> dict:
    if place is None:
        return {
            "query": str(query),
            "place": None,
            "kind": None,
            "country_code": None,
            "lat": None,
            "lon": None,
            "population": None,
        }
    return {
        "query": str(query),
        "place": place.name,
        "kind": place.kind,
        "country_code": place.country_code,
        "lat": place.lat,
        "lon": place.lon,
        "population": place.population,
    }


def _missed_warning(missed: list[str], geocoder: Any) -> Warning:
    shown = []
    for query in missed[:5]:
        near = geocoder.near_names(query)
        shown.append(f"{query!r}" + (f" (closest: {', '.join(near)})" if near else ""))
    more = f" and {len(missed) - 5:,} more" if len(missed) > 5 else ""
    return Warning("no_match", f"not found: {'; '.join(shown)}{more}; try 'Name, Country' or another spelling")


MAP_FORMATS = {
    "svg": "image/svg+xml",
    "geojson": "application/geo+json",
    "geoparquet": "application/vnd.apache.parquet",
}


@uniform_contract(name="save_map", is_tabular=False)
@catalog_errors
def save_map(inputs: dict, context: ToolContext) -> Ok:
    """Datasets with geometry as one map: a map_display card and a file (SVG drawing, GeoJSON or GeoParquet)."""
    from datacatalog.files import file_card, register_export
    from tools.lib.geo import map_layer, style_of
    from tools.lib.map_svg import LAYER_MAX_FEATURES

    books = catalog(context)
    layers, warnings, cards = [], [], []
    for index, spec in enumerate(inputs["layers"]):
        field = f"layers[{index}]"
        name, frame, found = load(
            books, spec.get("dataset"), spec.get("geometry"), spec.get("crs"), f"{field}.geometry", f"{field}.crs"
        )
        label = spec.get("label_column")
        if label and label not in frame.columns:
            raise HintException(
                "schema",
                f"{field}.label_column: {name!r} has no column {label!r}",
                [{"label": str(c), "score": 0.5} for c in frame.columns[:10]],
            )
        layers.append((name, frame, label))
        collection, truncated = map_layer(frame)
        warnings += found + truncated
        cards.append(
            map_display_card(
                collection,
                layer_id=name,
                display_id=inputs.get("display_id", "main"),
                style=style_of(frame),
                label=label,
            )
        )
    title = inputs.get("title") or ", ".join(name for name, _, _ in layers)
    fmt = inputs.get("format", "svg")
    if fmt == "svg":
        warnings += [
            Warning("truncated", f"the SVG draws {LAYER_MAX_FEATURES:,} of {len(frame):,} features of {name}")
            for name, frame, _ in layers
            if len(frame) > LAYER_MAX_FEATURES
        ]
    payload = _map_file(layers, title, fmt)
    filename = f"{inputs.get('filename') or _file_stem(title)}.{'parquet' if fmt == 'geoparquet' else fmt}"
    export = register_export(
        books.tenant_id, books.conversation_id, filename, payload, MAP_FORMATS[fmt], source_tool="save_map"
    )
    features = sum(len(frame) for _, frame, _ in layers)
    shown = f"Map {title!r}: {len(layers)} layer(s), {features:,} feature(s), shown to the user"
    return Ok(
        rows=features,
        data=f"{shown}; file: {export['original_filename']}",
        warnings=warnings,
        effects=Effects(cards=[*cards, file_card(export)], exports={export["original_filename"]: export}),
    )


def _map_file(layers: list, title: str, fmt: str) -> bytes:
    """The map's file: an SVG drawing over the world layer, or every layer's features (a ``layer`` column)."""
    import io

    import pandas as pd

    from tools.lib.geocoding import world_countries
    from tools.lib.map_svg import render_svg

    if fmt == "svg":
        return render_svg(layers, title, world_countries()).encode()
    merged = pd.concat([frame.assign(layer=name) for name, frame, _ in layers], ignore_index=True)
    if fmt == "geojson":
        return merged.to_json(na="null", to_wgs84=True).encode()
    buffer_ = io.BytesIO()
    merged.to_parquet(buffer_, index=False)
    return buffer_.getvalue()


def _file_stem(title: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in title.lower()).strip("_")[:60] or "map"


TOOLS = (
    Tool(
        name="save_map",
        description=(
            "Show datasets with geometry as one map (one layer each, up to 8) and save it as a "
            "file: an SVG drawing over a world map, GeoJSON, or GeoParquet. Use it for the map the "
            "user keeps; results of the other spatial tools are already shown."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "layers": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 8,
                    "items": {
                        "type": "object",
                        "properties": {
                            "dataset": DATASET,
                            "geometry": GEOMETRY_FIELD,
                            "crs": CRS_FIELD,
                            "label_column": {"type": "string", "maxLength": 200},
                        },
                        "required": ["dataset"],
                        "additionalProperties": False,
                    },
                },
                "title": {"type": "string", "maxLength": 200},
                "format": {"type": "string", "enum": list(MAP_FORMATS), "default": "svg"},
                "filename": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,60}$"},
                "display_id": DISPLAY_ID,
            },
            "required": ["layers"],
            "additionalProperties": False,
        },
        handler=save_map,
        category="spatial",
        status_message="Saving the map",
        timeout_seconds=120,
        input_examples=(
            {
                "layers": [{"dataset": "regions"}, {"dataset": "stores", "label_column": "name"}],
                "title": "Stores by region",
            },
        ),
    ),
    Tool(
        name="geocode",
        description=(
            "Find the latitude and longitude of place names: cities (15,000 people or more) and countries, "
            "offline; 'Name, Country' or country narrows it. Give a list of places, or a dataset and "
            "the column holding them (the rows get lat, lon). Saves the result as a dataset with a map."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "places": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": 200},
                    "minItems": 1,
                    "maxItems": 200,
                },
                "dataset": DATASET,
                "column": {"type": "string", "minLength": 1, "description": "The dataset's column of place names."},
                "country": {
                    "type": "string",
                    "pattern": "^[A-Za-z]{2}$",
                    "description": "ISO 3166 alpha-2 code, e.g. NO.",
                },
                "save_as": SAVE_AS,
                "display_id": DISPLAY_ID,
            },
            "additionalProperties": False,
        },
        handler=geocode,
        category="spatial",
        status_message="Finding the places",
        timeout_seconds=120,
        input_examples=(
            {"places": ["Oslo", "Lyon, France", "Portland, US"]},
            {"dataset": "offices", "column": "city", "country": "DE"},
        ),
    ),
)
