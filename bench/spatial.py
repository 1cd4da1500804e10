"""spatial_join of 100,000 points with 200 polygons, through execute_tool, against GeoPandas.

Prints seconds per join (median of --runs):
  tool_s            execute_tool("spatial_join"): load both datasets from the catalog,
                    parse the geometry (lat/lon columns, WKT), join, save the 100,000-row
                    result as Parquet (WKT geometry) and draw the map card's 5,000 features
  geopandas_s       geopandas.sjoin on the same GeoDataFrames already in memory
  geopandas_io_s    the same plus reading both Parquet files and building the geometries:
                    the raw path the tool's work is made of
  matched           rows of the join (both paths must agree)

Goal (issue #37): tool_s <= 2 s on the 2-core development machine.

Usage: python bench/spatial.py [--points N] [--polygons N] [--runs N] [--json] [--database-url URL]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import _django


def _datasets(points: int, polygons: int):
    """Random points in a box over southern Norway, and Voronoi cells of ``polygons`` seeds."""
    import numpy as np
    import pandas as pd
    import shapely

    rng = np.random.default_rng(37)
    west, south, east, north = 5.0, 58.0, 12.0, 63.0
    frame = pd.DataFrame(
        {
            "id": np.arange(points),
            "lat": rng.uniform(south, north, points),
            "lon": rng.uniform(west, east, points),
            "value": rng.normal(size=points),
        }
    )
    seeds = shapely.multipoints(
        np.column_stack([rng.uniform(west, east, polygons), rng.uniform(south, north, polygons)])
    )
    cells = shapely.voronoi_polygons(seeds, extend_to=shapely.box(west, south, east, north))
    clipped = [cell.intersection(shapely.box(west, south, east, north)) for cell in cells.geoms]
    regions = pd.DataFrame({"region": [f"r{i:03d}" for i in range(len(clipped))], "geometry": shapely.to_wkt(clipped)})
    return frame, regions


def _median(fn, runs: int) -> tuple[float, object]:
    times, value = [], None
    for _ in range(runs):
        started = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--polygons", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    os.environ["EUNICE_FILES_DIR"] = tempfile.mkdtemp(prefix="eunice-bench-files-")
    from _machine import reference_ms

    database = _django.setup(args.database_url)
    import geopandas as gpd
    import shapely
    from django.test import override_settings

    from conversations.models import Conversation
    from datacatalog.store import ConversationCatalog
    from registry.context import ToolContext
    from registry.registry import get_registry

    override_settings(EXECUTION_LOG_ENABLED=False).enable()  # held by registry.hot_settings
    conversation = Conversation.objects.create(tenant_id="bench", id="bench-spatial")
    books = ConversationCatalog("bench", conversation.id)
    points, regions = _datasets(args.points, args.polygons)
    books.save("points", points, source="upload")
    books.save("regions", regions, source="upload")
    context = ToolContext(tenant_id="bench", user_id="bench", conversation_id=conversation.id)
    registry = get_registry()
    inputs = {"left": "points", "right": "regions", "predicate": "within", "save_as": "joined"}

    def tool():
        result = registry.execute_tool("spatial_join", inputs, context)
        assert result.error is None, result.content
        return len(books.load("joined"))

    def raw_io():
        left = books.load("points")
        right = books.load("regions")
        left = gpd.GeoDataFrame(left, geometry=gpd.points_from_xy(left.lon, left.lat), crs=4326)
        right = gpd.GeoDataFrame(right, geometry=shapely.from_wkt(right.geometry), crs=4326)
        return len(gpd.sjoin(left, right, predicate="within"))

    in_memory = (
        gpd.GeoDataFrame(points, geometry=gpd.points_from_xy(points.lon, points.lat), crs=4326),
        gpd.GeoDataFrame(regions, geometry=shapely.from_wkt(regions.geometry), crs=4326),
    )
    tool()  # imports and first-use caches are not part of a join
    tool_s, matched = _median(tool, args.runs)
    raw_s, raw_matched = _median(lambda: len(gpd.sjoin(*in_memory, predicate="within")), args.runs)
    io_s, _ = _median(raw_io, args.runs)
    assert matched == raw_matched, (matched, raw_matched)
    results = {
        "tool_s": tool_s,
        "geopandas_s": raw_s,
        "geopandas_io_s": io_s,
        "matched": matched,
        "points": args.points,
        "polygons": len(regions),
        "runs": args.runs,
        "goal_met": tool_s <= 2.0,
        "database": database,
        "machine_reference_ms": reference_ms(),
    }
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()
