"""Spatial results are drawn in the chat page: geocoded points and their buffers as
map_display cards over the shipped world layer, with no tile server (Chromium)."""

from __future__ import annotations

import pytest

from tests.web.conftest import CHROMIUM
from tests.web.test_browser import open_conversation, say, sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]


def settled(page) -> None:
    page.wait_for_function("() => document.querySelector('#send').disabled === false")


def test_geocoded_places_and_their_buffers_are_drawn_on_maps(server, conversation, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, '/geocode {"places": ["Oslo", "Bergen"]}')
    page.wait_for_selector("#panel .card-map_display .leaflet-container")
    settled(page)
    say(page, '/buffer {"dataset": "geocoded", "distance_m": 50000, "save_as": "reach"}')
    page.wait_for_function("() => document.querySelectorAll('#panel .card-map_display').length === 2")
    page.wait_for_function("() => document.querySelectorAll('#panel .leaflet-basemap-pane path').length >= 2")
    points, areas = page.locator("#panel .card-map_display").all()
    assert points.locator("path.leaflet-interactive").count() == 2  # a circle marker each
    circles = areas.locator("path.leaflet-interactive")
    assert circles.count() == 2 and circles.first.get_attribute("fill-opacity") == "0.6"
    box = circles.first.bounding_box()
    assert box["width"] > 5 and box["height"] > 5, box  # 100 km across: more than a marker
    assert page.locator("#panel img.leaflet-tile").count() == 0  # no tile server asked
