"""axe-core (vendored under tests/web/vendor/, MPL-2.0) checks the chat page in Chromium:
a conversation with Markdown, a table, code, a chart, a map, a tool call and a question,
light and dark; no serious or critical violation.

axe is served to the page from its own origin (a Playwright route), so the page's
Content-Security-Policy stays as the product sends it.
"""

import os
from pathlib import Path

import pytest

from conversations.models import ChatMessage, ConversationEvent, TurnRecord
from tests.conftest import TENANT
from tests.web.conftest import CHROMIUM, serving
from tests.web.test_browser import open_conversation, sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(400),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
ANSWER = """## Rain in Norway

Bergen gets **twice** the rain of Oslo:

| city | rain (mm) |
|---|---|
| Oslo | 12 |
| Bergen | 25 |

```python
print(25 / 12)
```
"""
CHART = {
    "type": "chart",
    "title": "Rain",
    "spec": {
        "data": {"values": [{"city": "Oslo", "rain": 12}, {"city": "Bergen", "rain": 25}]},
        "mark": "bar",
        "encoding": {"x": {"field": "city", "type": "nominal"}, "y": {"field": "rain", "type": "quantitative"}},
    },
}
MAP = {
    "type": "map_display",
    "display_id": "m1",
    "sources": [
        {
            "id": "cities",
            "type": "geojson",
            "data": {
                "type": "FeatureCollection",
                "features": [
                    {
                        "type": "Feature",
                        "geometry": {"type": "Point", "coordinates": [10.75, 59.91]},
                        "properties": {"city": "Oslo"},
                    },
                    {
                        "type": "Feature",
                        "geometry": {"type": "Point", "coordinates": [5.32, 60.39]},
                        "properties": {"city": "Bergen"},
                    },
                ],
            },
        }
    ],
    "layers": [{"id": "cities", "source": "cities", "type": "circle", "label": "city"}],
    "bounds": [[59.91, 5.32], [60.39, 10.75]],
}


@pytest.fixture(scope="module")
def server(django_db_setup):
    with serving({}) as url:
        yield url


def store_turn(conversation, turn: int, question: str, events: list, answer: str, cards: list) -> None:
    ChatMessage.objects.create(
        conversation=conversation, message_id=f"u{turn}", tenant_id=TENANT, role="user", text=question
    )
    ChatMessage.objects.create(
        conversation=conversation, message_id=f"a{turn}", tenant_id=TENANT, role="assistant", text=answer, cards=cards
    )
    rows = [("user_message", {"text": question, "turn": turn}), *events, ("done", {"turn": turn})]
    for sequence, (kind, data) in enumerate(rows, start=1):
        ConversationEvent.objects.create(
            conversation=conversation, turn=turn, sequence=sequence, event_type=kind, data=data
        )
    TurnRecord.objects.create(conversation=conversation, turn=turn, status=TurnRecord.Status.FINISHED)


def showcase(conversation) -> None:
    """One conversation with everything the page draws (stored: the page draws it on load)."""
    events = [
        ("thinking", {"text": "The user wants the rain by city."}),
        ("text_delta", {"text": "Let me fetch the numbers."}),
        ("tool_call", {"tool_use_id": "t1", "name": "query", "input": {"sql": "select city, rain from rain"}}),
        (
            "tool_result",
            {
                "tool_use_id": "t1",
                "name": "query",
                "content": "✓ ok. 2 rows.\ncity | rain\nOslo | 12\nBergen | 25",
                "error": None,
            },
        ),
        ("card", {"card": CHART}),
        ("card", {"card": MAP}),
        ("tool_call", {"tool_use_id": "t2", "name": "request_user_input", "input": {"question": "Which city next?"}}),
        (
            "tool_result",
            {
                "tool_use_id": "t2",
                "name": "request_user_input",
                "content": "✓ ok. 1 row.\nThe user answered: Bergen",
                "error": None,
            },
        ),
    ]
    store_turn(conversation, 1, "Where does it rain more, Oslo or Bergen?", events, ANSWER, [CHART, MAP])


@pytest.fixture
def showcase_conversation(conversation):
    showcase(conversation)
    return conversation


def axe_violations(page, server) -> list[dict]:
    page.route(f"{server}/__axe.js", lambda route: route.fulfill(path=str(AXE), content_type="text/javascript"))
    page.add_script_tag(url=f"{server}/__axe.js")
    results = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_chat_page_has_no_serious_or_critical_axe_violation(scheme, server, showcase_conversation, browser_page):
    page = browser_page
    page.emulate_media(color_scheme=scheme)
    sign_in(page, server)
    open_conversation(page, server, showcase_conversation)
    page.wait_for_selector("#messages .card-chart svg")
    page.wait_for_selector("#panel .card-map_display .leaflet-container")
    assert axe_violations(page, server) == []
    shots = os.environ.get("EUNICE_SCREENSHOTS")  # a directory: the page at desktop and phone size
    if shots:
        for name, size in (("desktop", {"width": 1400, "height": 900}), ("phone", {"width": 390, "height": 844})):
            page.set_viewport_size(size)
            page.wait_for_timeout(500)  # the map and chart follow the new size
            page.screenshot(path=f"{shots}/{name}-{scheme}.png", full_page=True)
