"""Uploaded files with geometry as catalog datasets: GeoJSON and GeoParquet.

A dataset keeps a geometry as WKT text in WGS 84 longitude/latitude (EPSG:4326) in a
column named ``geometry`` (what tools/lib/geo.py reads and writes), so a GeoParquet
file in another CRS is reprojected on upload, and a GeoJSON feature's properties
become columns. Shapely, pyproj and GeoPandas are imported only when such a file comes.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def is_geojson(frame: pd.DataFrame) -> bool:
    """Whether a JSON upload (flattened by json_normalize) was a list of GeoJSON features."""
    return "geometry.type" in frame.columns or ("type" in frame.columns and "geometry" in frame.columns)


def from_geojson(frame: pd.DataFrame) -> pd.DataFrame:
    """The features of a GeoJSON upload as rows: properties as columns, the geometry as WKT.

    Raises ValueError naming the first feature whose geometry does not parse.
    """
    import shapely

    parts = [c for c in frame.columns if c.startswith("geometry.")]
    if parts:
        records = frame[parts].rename(columns=lambda c: c.removeprefix("geometry.")).to_dict("records")
        geometries = [json.dumps(r) if isinstance(r.get("type"), str) else None for r in records]
    else:
        geometries = [json.dumps(g) if isinstance(g, dict) else None for g in frame["geometry"]]
    shapes = shapely.from_geojson(geometries, on_invalid="ignore")
    broken = [i for i, (text, shape) in enumerate(zip(geometries, shapes, strict=True)) if text and shape is None]
    if broken:
        raise ValueError(f"feature {broken[0]} has a geometry that is not GeoJSON")
    table = frame.drop(columns=[*parts, *[c for c in ("type", "geometry", "id") if c in frame.columns]])
    table = table.rename(columns=lambda c: c.removeprefix("properties."))
    if "id" in frame.columns and "id" not in table.columns:
        table.insert(0, "id", frame["id"])
    table["geometry"] = shapely.to_wkt(shapes, rounding_precision=7, trim=True)
    return table


def is_geoparquet(payload: bytes) -> bool:
    import pyarrow.parquet as pq

    return b"geo" in (pq.ParquetFile(io.BytesIO(payload)).schema_arrow.metadata or {})


def from_geoparquet(payload: bytes) -> pd.DataFrame:
    """A GeoParquet file (already checked against the dataset limits) with its primary geometry as
    WKT in EPSG:4326; other geometry columns become WKT in their own CRS."""
    import geopandas as gpd
    import pandas as pd
    import shapely

    frame = gpd.read_parquet(io.BytesIO(payload))
    if frame.crs is not None:
        frame = frame.to_crs("EPSG:4326")
    table = pd.DataFrame(frame)
    for column in table.columns:
        if isinstance(table[column].dtype, gpd.array.GeometryDtype):
            table[column] = shapely.to_wkt(table[column].to_numpy(), rounding_precision=7, trim=True)
    return table.rename(columns={frame.geometry.name: "geometry"})
