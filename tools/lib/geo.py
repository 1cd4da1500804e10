"""Geometry in the conversation catalog: reading it from a dataset, saving it back, projecting.

A catalog dataset is a plain table, so a geometry travels in it as WKT text in a
column named ``geometry``, always in WGS 84 longitude/latitude (EPSG:4326): every
other tool (preview_data, query, export) can read it, and no CRS is lost between
calls. A dataset's geometry is found in, by order: the column the caller names
(``"LAT,LON"`` names a pair of coordinate columns), a column named geometry, geom,
wkt or the_geom (WKT, WKB or GeoJSON values), a latitude and a longitude column.
Distances and buffers are measured in metres in the projection of each feature's own
place (``local_zones``: its UTM zone), areas in an equal-area projection; never in degrees.

GeoPandas, Shapely and pyproj are imported inside the functions that use them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from registry.contract import HintException, Warning
from tools.datacommon import check_columns

if TYPE_CHECKING:
    import geopandas as gpd
    import pandas as pd

    from datacatalog.store import ConversationCatalog

WGS84 = "EPSG:4326"
# A projection whose areas are true everywhere: overlay results' area_m2.
EQUAL_AREA = "EPSG:6933"
GEOMETRY_NAMES = ("geometry", "geom", "wkt", "the_geom")
LAT_NAMES = ("lat", "latitude", "y")
LON_NAMES = ("lon", "lng", "long", "longitude", "x")
MAP_MAX_FEATURES = 5000

GEOMETRY_FIELD = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "description": (
        "Geometry column (WKT, WKB or GeoJSON values), or 'LAT,LON' naming two coordinate "
        "columns; default: a column named geometry/wkt/geom, else lat/latitude and lon/longitude."
    ),
}
CRS_FIELD = {
    "type": "string",
    "minLength": 1,
    "maxLength": 100,
    "default": WGS84,
    "description": "CRS the input coordinates are in (e.g. EPSG:25833); results are always EPSG:4326.",
}


def parse_crs(value: str | None, field: str = "crs") -> Any:
    """The pyproj CRS ``value`` names (EPSG:4326 when empty). Raises a schema Hint naming ``field``."""
    from pyproj import CRS
    from pyproj.exceptions import CRSError

    try:
        return CRS.from_user_input(value or WGS84)
    except CRSError:
        raise HintException(
            "schema",
            f"{field}: {value!r} is not a CRS pyproj knows",
            [{"label": label, "score": 0.9} for label in ("EPSG:4326", "EPSG:3857", "EPSG:25833")],
        ) from None


def geo_frame(
    frame: pd.DataFrame,
    *,
    dataset: str,
    geometry: str | None = None,
    crs: str | None = None,
    field: str = "geometry",
    crs_field: str = "crs",
) -> tuple[gpd.GeoDataFrame, list[Warning]]:
    """``frame`` as a GeoDataFrame in EPSG:4326, rows without a geometry left out (with a warning).

    Raises a schema Hint naming ``field`` when no geometry is found or a value does not parse.
    """
    import geopandas as gpd

    source_crs = parse_crs(crs, crs_field)
    columns = {str(c).lower(): str(c) for c in frame.columns}
    if geometry and "," in geometry:
        lat, _, lon = (part.strip() for part in geometry.partition(","))
        shapes, used = _points(frame, lat, lon, field), [lat, lon]
    else:
        name = geometry or next((columns[c] for c in GEOMETRY_NAMES if c in columns), None)
        if name is not None:
            check_columns(frame, [name], field)
            shapes, used = _parse_column(frame[name], name, field), [name]
        else:
            found_lat = next((columns[c] for c in LAT_NAMES if c in columns), None)
            found_lon = next((columns[c] for c in LON_NAMES if c in columns), None)
            if found_lat is None or found_lon is None:
                raise HintException(
                    "schema",
                    f"{field}: dataset {dataset!r} has no geometry column (geometry, wkt, geom) and no "
                    "latitude/longitude columns; name one, or 'LAT,LON'",
                    [{"label": str(c), "score": 0.5} for c in frame.columns[:10]],
                )
            shapes, used = _points(frame, found_lat, found_lon, field), [found_lat, found_lon]
    table = frame.drop(columns=used).reset_index(drop=True)
    # A text column called geometry that is not the one read would clash with the geometry made.
    table = table.rename(columns={c: f"{c}_text" for c in table.columns if str(c) == "geometry"})
    result = gpd.GeoDataFrame(table, geometry=gpd.GeoSeries(shapes, crs=source_crs), crs=source_crs)
    missing = result.geometry.isna() | result.geometry.is_empty
    warnings = []
    if missing.any():
        warnings.append(
            Warning("data_quality", f"{dataset}: {int(missing.sum()):,} row(s) without a geometry left out")
        )
    if source_crs.is_geographic:
        bounds = result.geometry.bounds
        outside = ~missing & ~(bounds.minx.ge(-180) & bounds.maxx.le(180) & bounds.miny.ge(-90) & bounds.maxy.le(90))
        if outside.any():
            warnings.append(
                Warning(
                    "data_quality",
                    f"{dataset}: {int(outside.sum()):,} row(s) with coordinates outside ±180° longitude, ±90° "
                    f"latitude left out (projected coordinates? name their CRS in {crs_field})",
                )
            )
            missing = missing | outside
    if missing.any():
        result = result[~missing].reset_index(drop=True)
    if not source_crs.equals(parse_crs(WGS84)):
        result = result.to_crs(WGS84)
    return result, warnings


def _points(frame: pd.DataFrame, lat: str, lon: str, field: str) -> Any:
    import pandas as pd
    import shapely

    check_columns(frame, [lat, lon], field)
    ys = pd.to_numeric(frame[lat], errors="coerce")
    xs = pd.to_numeric(frame[lon], errors="coerce")
    shapes = shapely.points(xs.to_numpy(dtype=float), ys.to_numpy(dtype=float))
    shapes[(xs.isna() | ys.isna()).to_numpy()] = None
    return shapes


def _parse_column(values: pd.Series, name: str, field: str) -> Any:
    """Shapely geometries of a column of WKT or GeoJSON text, WKB bytes or GeoJSON objects."""
    import numpy as np
    import shapely

    raw = values.to_numpy(dtype=object)
    present = values.notna().to_numpy()
    shapes = np.full(len(raw), None, dtype=object)
    kinds = {
        "wkb": np.array([isinstance(v, (bytes, bytearray, memoryview)) for v in raw], dtype=bool),
        "geojson": np.array([isinstance(v, dict) or (isinstance(v, str) and v.lstrip()[:1] == "{") for v in raw]),
    }
    text = present & ~kinds["wkb"] & ~kinds["geojson"]
    if text.any():
        shapes[text] = shapely.from_wkt(raw[text].astype(str), on_invalid="ignore")
    if kinds["wkb"].any():
        shapes[kinds["wkb"]] = shapely.from_wkb([bytes(v) for v in raw[kinds["wkb"]]], on_invalid="ignore")
    if kinds["geojson"].any():
        encoded = [v if isinstance(v, str) else json.dumps(v) for v in raw[kinds["geojson"]]]
        shapes[kinds["geojson"]] = shapely.from_geojson(encoded, on_invalid="ignore")
    broken = np.flatnonzero(present & np.array([s is None for s in shapes]))
    if len(broken):
        sample = str(raw[broken[0]])[:60]
        raise HintException(
            "schema",
            f"{field}: column {name!r} row {int(broken[0])} is not WKT, WKB or GeoJSON ({sample!r}); "
            f"{len(broken):,} row(s) do not parse; WKT looks like 'POINT (10.75 59.91)', coordinate "
            "columns are named 'LAT,LON'",
        )
    return shapes


def save_geo(books: ConversationCatalog, name: str, frame: gpd.GeoDataFrame, *, tool: str) -> pd.DataFrame:
    """Store ``frame`` as dataset ``name``: its geometry as WKT in EPSG:4326, in a ``geometry`` column.

    Returns the table as stored. Raises CatalogError for a bad name or a frame past the limits.
    """
    table = as_table(frame)
    books.save(name, table, source="tool", source_detail=tool)
    return table


def as_table(frame: gpd.GeoDataFrame) -> pd.DataFrame:
    """``frame`` as a plain DataFrame with WKT geometry (EPSG:4326) last, in a column ``geometry``."""
    import pandas as pd
    import shapely

    shapes = frame.to_crs(WGS84).geometry if frame.crs is not None else frame.geometry
    table = pd.DataFrame(frame.drop(columns=[frame.geometry.name]))
    table = table.drop(columns=[c for c in table.columns if str(c) == "geometry"])
    table["geometry"] = shapely.to_wkt(shapes.to_numpy(), rounding_precision=7, trim=True)
    return table


def local_zones(frame: gpd.GeoDataFrame) -> Any:
    """For each geometry of ``frame`` (EPSG:4326), the EPSG code of a projection in metres around it:
    the UTM zone of its representative point, polar stereographic beyond 84° N / 80° S."""
    import numpy as np

    anchors = frame.geometry.representative_point()
    lons, lats = anchors.x.to_numpy(), anchors.y.to_numpy()
    utm = np.where(lats >= 0, 32600, 32700) + np.minimum((lons + 180) // 6 + 1, 60)
    return np.where(lats > 84, 3995, np.where(lats < -80, 3031, utm)).astype(int)


def buffer_in_metres(frame: gpd.GeoDataFrame, distance_m: float, quad_segs: int = 8) -> gpd.GeoDataFrame:
    """Each geometry of ``frame`` (EPSG:4326) buffered by ``distance_m`` metres, measured in the
    projection of its own place (``local_zones``); EPSG:4326 out."""
    import numpy as np
    import shapely

    zones = local_zones(frame)
    shapes = np.empty(len(frame), dtype=object)
    for epsg in np.unique(zones):
        rows = np.flatnonzero(zones == epsg)
        projected = frame.geometry.iloc[rows].to_crs(epsg=int(epsg))
        grown = shapely.buffer(projected.to_numpy(), distance_m, quad_segs=quad_segs)
        shapes[rows] = type(projected)(grown, crs=projected.crs).to_crs(WGS84).to_numpy()
    result = frame.copy()
    result["geometry"] = type(frame.geometry)(shapes, crs=WGS84)
    return result.set_geometry("geometry")


def nearest_in_metres(
    left: gpd.GeoDataFrame, right: gpd.GeoDataFrame, *, how: str, max_distance_m: float | None
) -> gpd.GeoDataFrame:
    """Each left row joined with its nearest right row, searched in the left row's local projection
    (``local_zones``); ``distance_m`` is the geodesic distance (WGS 84 ellipsoid) between the two
    geometries' nearest points. EPSG:4326 out."""
    import geopandas as gpd
    import numpy as np
    import pandas as pd
    import shapely
    from pyproj import Geod

    zones = local_zones(left)
    parts = []
    for epsg in np.unique(zones):
        rows = left.iloc[np.flatnonzero(zones == epsg)]
        found = gpd.sjoin_nearest(
            rows.to_crs(epsg=int(epsg)), right.to_crs(epsg=int(epsg)), how=how, max_distance=max_distance_m
        )
        parts.append(found.to_crs(WGS84))
    joined = pd.concat(parts) if parts else gpd.sjoin_nearest(left, right, how=how)
    joined = joined.sort_index(kind="stable")
    matched = joined["index_right"].notna().to_numpy()
    distances = np.full(len(joined), np.nan)
    if matched.any():
        targets = right.geometry.loc[joined["index_right"][matched].astype(int)].to_numpy()
        ends = shapely.get_coordinates(shapely.shortest_line(joined.geometry.to_numpy()[matched], targets))
        ends = ends.reshape(-1, 2, 2)
        _, _, metres = Geod(ellps="WGS84").inv(ends[:, 0, 0], ends[:, 0, 1], ends[:, 1, 0], ends[:, 1, 1])
        distances[matched] = np.round(metres, 1)
    joined["distance_m"] = distances
    return joined


def map_layer(frame: gpd.GeoDataFrame, *, properties: int = 8) -> tuple[dict, list[Warning]]:
    """A GeoJSON FeatureCollection of at most MAP_MAX_FEATURES features of ``frame`` (EPSG:4326)
    with up to ``properties`` of its columns, and a warning when features were left out."""
    import shapely

    shown = frame.head(MAP_MAX_FEATURES)
    columns = [c for c in shown.columns if c != shown.geometry.name][:properties]
    records = json.loads(shown[columns].to_json(orient="records", date_format="iso")) if columns else None
    geometries = shapely.to_geojson(shown.geometry.to_numpy())
    features = [
        {"type": "Feature", "geometry": json.loads(geometry), "properties": records[i] if records else {}}
        for i, geometry in enumerate(geometries)
        if geometry is not None
    ]
    warnings = []
    if len(frame) > MAP_MAX_FEATURES:
        warnings.append(Warning("truncated", f"the map shows {MAP_MAX_FEATURES:,} of {len(frame):,} features"))
    return {"type": "FeatureCollection", "features": features}, warnings


def style_of(frame: gpd.GeoDataFrame) -> str:
    """How a map card draws ``frame``: fill for polygons, line for lines, circle for points."""
    kinds = set(frame.geometry.geom_type.dropna().unique())
    if kinds & {"Polygon", "MultiPolygon"}:
        return "fill"
    if kinds & {"LineString", "MultiLineString", "LinearRing"}:
        return "line"
    return "circle"
