"""spatial_join, spatial_overlay, buffer and spatial_filter through execute_tool, each checked
against GeoPandas called directly on the same data (Natural Earth countries, GeoNames cities)."""

from __future__ import annotations

import math

import geopandas as gpd
import pandas as pd
import pytest
import shapely
from pyproj import Geod

from tests.conftest import OTHER_TENANT

pytestmark = pytest.mark.django_db(transaction=True)


def cities_frame(city_rows):
    frame = pd.DataFrame(city_rows)
    return gpd.GeoDataFrame(frame, geometry=gpd.points_from_xy(frame.lon, frame.lat), crs="EPSG:4326")


def test_each_city_gets_the_country_it_lies_in_as_geopandas_says(places, in_conversation, world, city_rows):
    result = in_conversation("spatial_join", left="cities", right="countries", predicate="within")
    assert result.error is None, result.content
    saved = places.load("cities_join_countries")
    expected = gpd.sjoin(cities_frame(city_rows), world, predicate="within")
    assert dict(zip(saved.name_left, saved.name_right, strict=True)) == dict(
        zip(expected.name_left, expected.name_right, strict=True)
    )
    assert "Atlantic" not in set(saved.name_left)
    assert saved.set_index("name_left").loc["Oslo", "name_right"] == "Norway"


def test_a_left_join_keeps_the_point_in_the_sea(places, in_conversation):
    in_conversation("spatial_join", left="cities", right="countries", how="left", save_as="all_cities")
    saved = places.load("all_cities").set_index("name_left")
    assert len(saved) == 8 and pd.isna(saved.loc["Atlantic", "name_right"])


def test_the_nearest_join_measures_metres_on_the_ellipsoid(places, in_conversation, city_rows):
    others = pd.DataFrame([r for r in city_rows if r["name"] == "Stockholm"])
    places.save("stockholm", others, source="upload")
    result = in_conversation("spatial_join", left="cities", right="stockholm", predicate="nearest", save_as="to_sthlm")
    assert result.error is None, result.content
    row = places.load("to_sthlm").set_index("name_left").loc["Oslo"]
    oslo = next(r for r in city_rows if r["name"] == "Oslo")
    sthlm = others.iloc[0]
    _, _, geodesic = Geod(ellps="WGS84").inv(oslo["lon"], oslo["lat"], sthlm["lon"], sthlm["lat"])
    assert row["distance_m"] == pytest.approx(geodesic, rel=0.01)


def test_max_distance_is_refused_for_other_predicates(places, in_conversation):
    result = in_conversation("spatial_join", left="cities", right="countries", max_distance_m=10)
    assert result.content.startswith("⚠ schema hint: max_distance_m:")


def test_a_buffer_is_measured_in_metres_at_every_latitude(places, in_conversation):
    result = in_conversation("buffer", dataset="cities", distance_m=1000)
    assert result.error is None, result.content
    circles = places.load("cities_buffer").set_index("name")
    polygon = 32 / (2 * math.pi) * math.sin(2 * math.pi / 32)  # a circle drawn with 32 segments
    for city in ("Nairobi", "Oslo", "Tromsø"):  # the equator to 70° N: degrees would differ 3 times
        assert circles.loc[city, "area_m2"] == pytest.approx(math.pi * 1000**2 * polygon, rel=0.002)
    assert result.cards[0]["type"] == "map_display" and result.cards[0]["layers"][0]["type"] == "fill"


def test_a_dissolved_buffer_is_one_shape(places, in_conversation):
    in_conversation("buffer", dataset="cities", distance_m=600_000, dissolve=True, save_as="reach")
    reach = places.load("reach")
    assert len(reach) == 1 and shapely.from_wkt(reach.geometry[0]).geom_type == "MultiPolygon"


def test_an_overlay_intersection_matches_geopandas(places, in_conversation, world, city_rows):
    in_conversation("buffer", dataset="cities", distance_m=300_000, save_as="zones")
    result = in_conversation("spatial_overlay", left="zones", right="countries", how="intersection")
    assert result.error is None, result.content
    saved = places.load("zones_intersection_countries")
    zones = gpd.GeoDataFrame(places.load("zones"), geometry=shapely.from_wkt(places.load("zones").geometry), crs=4326)
    expected = gpd.overlay(zones, world, how="intersection", keep_geom_type=True)
    pairs = sorted(zip(saved.name_1, saved.name_2, strict=True))
    assert pairs == sorted(zip(expected.name_1, expected.name_2, strict=True))
    assert ("Geneva", "Switzerland") in pairs
    assert saved.area_m2.sum() == pytest.approx(expected.to_crs("EPSG:6933").area.sum(), rel=1e-4)


def test_filters_by_bbox_circle_and_another_dataset_match_geopandas(places, in_conversation, city_rows, world):
    cities = cities_frame(city_rows)
    in_conversation("spatial_filter", dataset="cities", bbox=[-10, 35, 30, 72], save_as="europe")
    assert set(places.load("europe").name) == set(cities[cities.intersects(shapely.box(-10, 35, 30, 72))].name)
    in_conversation("spatial_filter", dataset="cities", near={"lat": 59.91, "lon": 10.75, "distance_m": 420_000})
    assert set(places.load("cities_filtered").name) == {"Oslo", "Stockholm"}  # 416 km apart
    norway = world[world.name == "Norway"]
    places.save("norway", places.load("countries").loc[lambda f: f.name == "Norway"], source="upload")
    in_conversation("spatial_filter", dataset="cities", area_dataset="norway", predicate="within", save_as="in_no")
    assert set(places.load("in_no").name) == set(cities[cities.within(norway.union_all())].name) == {"Oslo", "Tromsø"}


def test_a_filter_needs_exactly_one_area(places, in_conversation):
    result = in_conversation("spatial_filter", dataset="cities", bbox=[0, 0, 1, 1], area_dataset="countries")
    assert result.content.startswith("⚠ schema hint: give exactly one of bbox, geojson, area_dataset, near")


def test_wkt_in_a_projected_crs_is_read_in_that_crs_and_saved_as_wgs84(places, in_conversation):
    from pyproj import Transformer

    x, y = Transformer.from_crs(4326, 25833, always_xy=True).transform(10.74609, 59.91273)
    places.save("sites", pd.DataFrame({"site": ["oslo"], "wkt": [f"POINT ({x} {y})"]}), source="upload")
    result = in_conversation(
        "spatial_join", left="sites", right="countries", left_crs="EPSG:25833", left_geometry="wkt"
    )
    assert result.error is None, result.content
    assert "Norway" in result.content
    point = shapely.from_wkt(places.load("sites_join_countries").geometry[0])
    assert (point.x, point.y) == pytest.approx((10.74609, 59.91273), abs=1e-6)


def test_an_unknown_crs_is_a_hint_with_examples(places, in_conversation):
    result = in_conversation("buffer", dataset="cities", distance_m=10, crs="EPSG:999999")
    assert result.content.startswith("⚠ schema hint: crs: 'EPSG:999999' is not a CRS") and "EPSG:4326" in result.content


def test_a_value_that_is_not_a_geometry_names_the_column_and_row(places, in_conversation):
    places.save("broken", pd.DataFrame({"geometry": ["POINT (1 2)", "PONT (3 4)"]}), source="upload")
    result = in_conversation("buffer", dataset="broken", distance_m=10)
    assert result.content.startswith("⚠ schema hint: geometry: column 'geometry' row 1 is not WKT")


def test_a_dataset_without_geometry_names_the_field_and_its_columns(places, in_conversation):
    places.save("plain", pd.DataFrame({"city": ["Oslo"], "pop": [1]}), source="upload")
    result = in_conversation("spatial_join", left="cities", right="plain")
    assert result.content.startswith("⚠ schema hint: right_geometry: dataset 'plain' has no geometry column")
    assert "city" in result.content


def test_another_tenants_conversation_cannot_reach_the_datasets(places, in_conversation, other_conversation):
    result = in_conversation(
        "buffer",
        tenant=OTHER_TENANT,
        context={"conversation_id": other_conversation.id},
        dataset="cities",
        distance_m=5,
    )
    assert result.content.startswith("⚠ schema hint: no dataset named 'cities'")


def test_named_coordinate_columns_win_over_a_geometry_column(places, in_conversation):
    frame = pd.DataFrame({"y_deg": [59.91], "x_deg": [10.75], "geometry": ["POINT (0 0)"]})
    places.save("both", frame, source="upload")
    in_conversation("spatial_join", left="both", right="countries", left_geometry="y_deg,x_deg", save_as="where")
    saved = places.load("where")
    assert list(saved.name) == ["Norway"] and list(saved.geometry_text) == ["POINT (0 0)"]


def test_projected_coordinates_read_as_degrees_are_left_out_with_a_hint_to_name_the_crs(places, in_conversation):
    places.save("sites", pd.DataFrame({"lat": [59.9, 6_642_000.0], "lon": [10.7, 597_000.0]}), source="upload")
    result = in_conversation("buffer", dataset="sites", distance_m=100)
    assert "1 row(s) with coordinates outside ±180° longitude, ±90° latitude left out" in result.content
    assert "name their CRS in crs" in result.content and len(places.load("sites_buffer")) == 1
