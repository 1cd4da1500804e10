"""Handlers of the spatial analyses: spatial_join, spatial_overlay, buffer, spatial_filter.

Each reads datasets with geometry (tools.lib.geo: WKT, WKB, GeoJSON or lat/lon
columns, in the CRS the caller names), computes with GeoPandas and Shapely, saves
its result as a dataset (WKT in EPSG:4326) and shows it as a ``map_display`` card.
``load`` and ``finish`` are shared with save_map and geocode (tools/places.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from registry.context import ToolContext
from registry.contract import Effects, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from tools.charts import map_display_card
from tools.datacommon import catalog, catalog_errors, table_ok
from tools.fragments import DATASET
from tools.lib.geo import CRS_FIELD, EQUAL_AREA, GEOMETRY_FIELD, WGS84

if TYPE_CHECKING:
    import geopandas as gpd

    from datacatalog.store import ConversationCatalog

PREDICATES = ("intersects", "within", "contains", "touches", "crosses", "overlaps", "nearest")
OVERLAYS = ("intersection", "union", "difference", "symmetric_difference", "identity")
PREVIEW_ROWS = 10


def load(
    books: ConversationCatalog,
    name: str | None,
    geometry: str | None,
    crs: str | None,
    field: str,
    crs_field: str = "crs",
) -> tuple:
    """(name, GeoDataFrame in EPSG:4326, warnings) of one input dataset; Hints name ``field``/``crs_field``."""
    from tools.lib.geo import geo_frame

    resolved = books.resolve(name)
    frame, warnings = geo_frame(
        books.load(resolved), dataset=resolved, geometry=geometry, crs=crs, field=field, crs_field=crs_field
    )
    return resolved, frame, warnings


SIDES = ("left", "right")


def load_side(books: ConversationCatalog, inputs: dict, side: str) -> tuple:
    """``load`` of a two-layer tool's ``left`` or ``right`` input, with its own geometry and CRS fields."""
    return load(
        books,
        inputs[side],
        inputs.get(f"{side}_geometry"),
        inputs.get(f"{side}_crs"),
        f"{side}_geometry",
        f"{side}_crs",
    )


def finish(
    books: ConversationCatalog,
    result: gpd.GeoDataFrame,
    *,
    name: str,
    tool: str,
    inputs: dict,
    warnings: list[Warning],
    summary: str,
) -> Ok:
    """Save ``result`` as dataset ``name``, draw it on a map card, and report ``summary``."""
    from tools.lib.geo import map_layer, save_geo, style_of

    table = save_geo(books, name, result, tool=tool)
    layer, truncated = map_layer(result)
    card = map_display_card(
        layer, layer_id=name, display_id=inputs.get("display_id", "main"), style=style_of(result), label=None
    )
    warnings = [*warnings, *truncated]
    if result.empty:
        warnings.append(Warning("no_match", f"{summary}: the result has no rows"))
    warnings.append(
        Warning("info", f"{summary}; saved as dataset {name!r} ({len(table):,} rows, geometry as WKT in {WGS84})")
    )
    return table_ok(
        table, data=table.head(PREVIEW_ROWS), warnings=warnings, effects=Effects(cards=[card], datasets={name: table})
    )


def save_name(inputs: dict, default: str) -> str:
    return inputs.get("save_as") or default[:64]


@uniform_contract(name="spatial_join", is_tabular=True)
@catalog_errors
def spatial_join(inputs: dict, context: ToolContext) -> Ok:
    """The left dataset's rows joined with the right's by where their geometries lie."""
    import geopandas as gpd

    from tools.lib.geo import nearest_in_metres

    books = catalog(context)
    (left_name, left, warn_left), (right_name, right, warn_right) = (load_side(books, inputs, side) for side in SIDES)
    predicate, how = inputs.get("predicate", "intersects"), inputs.get("how", "inner")
    if predicate == "nearest":
        joined = nearest_in_metres(left, right, how=how, max_distance_m=inputs.get("max_distance_m"))
    else:
        if inputs.get("max_distance_m") is not None:
            raise HintException("schema", "max_distance_m: only for predicate 'nearest'; drop it or use nearest")
        joined = gpd.sjoin(left, right, how=how, predicate=predicate)
    joined = joined.drop(columns=[c for c in ("index_right",) if c in joined.columns]).reset_index(drop=True)
    summary = f"{len(joined):,} row(s): {left_name} {predicate} {right_name} ({how} join)"
    return finish(
        books,
        joined,
        name=save_name(inputs, f"{left_name}_join_{right_name}"),
        tool="spatial_join",
        inputs=inputs,
        warnings=[*warn_left, *warn_right],
        summary=summary,
    )


@uniform_contract(name="spatial_overlay", is_tabular=True)
@catalog_errors
def spatial_overlay(inputs: dict, context: ToolContext) -> Ok:
    """Intersection, union, difference, symmetric difference or identity of two layers' geometries."""
    import geopandas as gpd

    books = catalog(context)
    (left_name, left, warn_left), (right_name, right, warn_right) = (load_side(books, inputs, side) for side in SIDES)
    how = inputs.get("how", "intersection")
    try:
        result = gpd.overlay(left, right, how=how, keep_geom_type=True)
    except (NotImplementedError, ValueError, TypeError) as exc:
        raise HintException(
            "schema",
            f"how: {how} of {left_name} and {right_name} is not possible ({str(exc)[:160]}); union, difference "
            "and symmetric_difference need polygons on both sides",
        ) from None
    if not result.empty and set(result.geom_type.unique()) & {"Polygon", "MultiPolygon"}:
        result["area_m2"] = result.to_crs(EQUAL_AREA).area.round(1)
    return finish(
        books,
        result.reset_index(drop=True),
        name=save_name(inputs, f"{left_name}_{how}_{right_name}"),
        tool="spatial_overlay",
        inputs=inputs,
        warnings=[*warn_left, *warn_right],
        summary=f"{len(result):,} feature(s): {how} of {left_name} and {right_name}",
    )


@uniform_contract(name="buffer", is_tabular=True)
@catalog_errors
def buffer(inputs: dict, context: ToolContext) -> Ok:
    """Each geometry grown (or, negative, shrunk) by a distance in metres; optionally dissolved into one."""
    import geopandas as gpd

    from tools.lib.geo import buffer_in_metres

    books = catalog(context)
    name, frame, warnings = load(books, inputs.get("dataset"), inputs.get("geometry"), inputs.get("crs"), "geometry")
    distance = float(inputs["distance_m"])
    grown = buffer_in_metres(frame, distance)
    if inputs.get("dissolve"):
        grown = gpd.GeoDataFrame({"features": [len(grown)]}, geometry=[grown.union_all()], crs=WGS84)
    grown = grown[~grown.geometry.is_empty].reset_index(drop=True)
    grown["area_m2"] = grown.to_crs(EQUAL_AREA).area.round(1)
    return finish(
        books,
        grown,
        name=save_name(inputs, f"{name}_buffer"),
        tool="buffer",
        inputs=inputs,
        warnings=warnings,
        summary=f"{len(frame):,} geometries of {name} buffered by {distance:g} m",
    )


@uniform_contract(name="spatial_filter", is_tabular=True)
@catalog_errors
def spatial_filter(inputs: dict, context: ToolContext) -> Ok:
    """The rows of a dataset whose geometry meets an area: a bbox, GeoJSON, another dataset or a circle."""
    books = catalog(context)
    name, frame, warnings = load(books, inputs.get("dataset"), inputs.get("geometry"), inputs.get("crs"), "geometry")
    area, described = _filter_area(books, inputs)
    predicate = inputs.get("predicate", "intersects")
    kept = frame[getattr(frame.geometry, predicate)(area)].reset_index(drop=True)
    return finish(
        books,
        kept,
        name=save_name(inputs, f"{name}_filtered"),
        tool="spatial_filter",
        inputs=inputs,
        warnings=warnings,
        summary=f"{len(kept):,} of {len(frame):,} row(s) of {name} {predicate} {described}",
    )


AREA_FIELDS = ("bbox", "geojson", "area_dataset", "near")


def _filter_area(books: ConversationCatalog, inputs: dict) -> tuple[Any, str]:
    """The one area a spatial_filter call names (EPSG:4326) and how to describe it."""
    import shapely

    given = [field for field in AREA_FIELDS if inputs.get(field) is not None]
    if len(given) != 1:
        raise HintException(
            "schema",
            f"give exactly one of {', '.join(AREA_FIELDS)} (got {', '.join(given) or 'none'}); "
            "bbox is [west, south, east, north] in degrees, near is {lat, lon, distance_m}",
        )
    field = given[0]
    if field == "bbox":
        west, south, east, north = inputs["bbox"]
        if west >= east or south >= north:
            raise HintException("schema", "bbox: expected [west, south, east, north] with west < east, south < north")
        return shapely.box(west, south, east, north), f"bbox {inputs['bbox']}"
    if field == "geojson":
        return _geojson_area(inputs["geojson"]), "the GeoJSON area"
    if field == "area_dataset":
        area_name, area, _ = load(books, inputs["area_dataset"], None, None, "area_dataset")
        return area.union_all(), f"dataset {area_name}"
    return _circle(
        inputs["near"]
    ), f"{inputs['near']['distance_m']:g} m of ({inputs['near']['lat']}, {inputs['near']['lon']})"


def _geojson_area(value: dict) -> Any:
    import json

    import shapely

    geometries = (
        [f.get("geometry") for f in value.get("features", [])]
        if value.get("type") == "FeatureCollection"
        else [value.get("geometry") if value.get("type") == "Feature" else value]
    )
    shapes = shapely.from_geojson([json.dumps(g) for g in geometries if g], on_invalid="ignore")
    if not len(shapes) or any(s is None for s in shapes):
        raise HintException("schema", "geojson: expected a GeoJSON geometry, Feature or FeatureCollection")
    return shapely.union_all(shapes)


def _circle(near: dict) -> Any:
    """A circle of ``distance_m`` around (lat, lon), drawn in an equidistant projection centred on it."""
    import geopandas as gpd
    from shapely.geometry import Point

    local = f"+proj=aeqd +lat_0={near['lat']} +lon_0={near['lon']} +datum=WGS84 +units=m"
    centre = gpd.GeoSeries([Point(0, 0)], crs=local)
    return centre.buffer(near["distance_m"], quad_segs=32).to_crs(WGS84).iloc[0]


SAVE_AS = {**DATASET, "description": "Name of the dataset to save the result as (default: made from the inputs)."}
DISPLAY_ID = {
    "type": "string",
    "default": "main",
    "maxLength": 64,
    "description": "Calls with the same display_id draw on one map.",
}


def _two_layer_schema(extra: dict) -> dict:
    return {
        "type": "object",
        "properties": {
            "left": {**DATASET, "description": "Dataset whose rows are kept and whose geometry the result has."},
            "right": {**DATASET, "description": "Dataset the left one is compared with."},
            **extra,
            "left_geometry": GEOMETRY_FIELD,
            "right_geometry": GEOMETRY_FIELD,
            "left_crs": CRS_FIELD,
            "right_crs": CRS_FIELD,
            "save_as": SAVE_AS,
            "display_id": DISPLAY_ID,
        },
        "required": ["left", "right"],
        "additionalProperties": False,
    }


TOOLS = (
    Tool(
        name="spatial_join",
        description=(
            "Join two datasets by location: each row of `left` gets the columns of the `right` rows "
            "its geometry intersects, lies within, contains… or, with predicate 'nearest', of the "
            "closest right row (distance_m in metres, max_distance_m to cap it). E.g. which region "
            "each point falls in. Saves the result as a dataset and shows it on a map."
        ),
        input_schema=_two_layer_schema(
            {
                "predicate": {"type": "string", "enum": list(PREDICATES), "default": "intersects"},
                "how": {
                    "type": "string",
                    "enum": ["inner", "left"],
                    "default": "inner",
                    "description": "left keeps unmatched left rows.",
                },
                "max_distance_m": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "Only for predicate 'nearest'.",
                },
            }
        ),
        handler=spatial_join,
        category="spatial",
        status_message="Joining by location",
        timeout_seconds=120,
        input_examples=({"left": "stores", "right": "regions", "predicate": "within"},),
    ),
    Tool(
        name="spatial_overlay",
        description=(
            "Overlay two layers of shapes: their intersection, union, difference, symmetric "
            "difference or identity, with both sides' columns and each polygon's area_m2. Saves the "
            "result as a dataset and shows it on a map."
        ),
        input_schema=_two_layer_schema({"how": {"type": "string", "enum": list(OVERLAYS), "default": "intersection"}}),
        handler=spatial_overlay,
        category="spatial",
        status_message="Overlaying the layers",
        timeout_seconds=120,
    ),
    Tool(
        name="buffer",
        description=(
            "Grow each geometry of a dataset by a distance in metres (negative shrinks polygons), "
            "measured in each feature's local UTM zone; dissolve merges the result into one shape. "
            "Saves the areas (with area_m2) as a dataset and shows them on a map."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "dataset": DATASET,
                "distance_m": {"type": "number", "minimum": -1_000_000, "maximum": 1_000_000, "description": "Metres."},
                "dissolve": {"type": "boolean", "default": False},
                "geometry": GEOMETRY_FIELD,
                "crs": CRS_FIELD,
                "save_as": SAVE_AS,
                "display_id": DISPLAY_ID,
            },
            "required": ["distance_m"],
            "additionalProperties": False,
        },
        handler=buffer,
        category="spatial",
        status_message="Drawing the buffers",
        timeout_seconds=120,
    ),
    Tool(
        name="spatial_filter",
        description=(
            "Keep only the rows of a dataset that lie inside (or touch) one area, e.g. the points "
            "inside a country or within 5 km of a place: a bbox [west, south, east, north], a GeoJSON "
            "geometry, the shapes of another dataset (area_dataset), or a circle (near: lat, lon, "
            "distance_m). Saves the rows as a dataset."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "dataset": DATASET,
                "bbox": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
                "geojson": {
                    "type": "object",
                    "description": "A GeoJSON geometry, Feature or FeatureCollection (EPSG:4326).",
                },
                "area_dataset": {**DATASET, "description": "A dataset whose shapes (united) are the area."},
                "near": {
                    "type": "object",
                    "properties": {
                        "lat": {"type": "number", "minimum": -90, "maximum": 90},
                        "lon": {"type": "number", "minimum": -180, "maximum": 180},
                        "distance_m": {"type": "number", "exclusiveMinimum": 0, "maximum": 20_000_000},
                    },
                    "required": ["lat", "lon", "distance_m"],
                    "additionalProperties": False,
                },
                "predicate": {"type": "string", "enum": ["intersects", "within"], "default": "intersects"},
                "geometry": GEOMETRY_FIELD,
                "crs": CRS_FIELD,
                "save_as": SAVE_AS,
                "display_id": DISPLAY_ID,
            },
            "additionalProperties": False,
        },
        handler=spatial_filter,
        category="spatial",
        status_message="Filtering by area",
        timeout_seconds=120,
        input_examples=(
            {"dataset": "stores", "near": {"lat": 59.91, "lon": 10.75, "distance_m": 5000}},
            {"dataset": "stores", "bbox": [4.5, 57.9, 31.2, 71.2], "save_as": "stores_norway"},
        ),
    ),
)
