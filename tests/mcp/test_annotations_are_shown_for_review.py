"""The review page and the REST tools list show what a tool's annotations claim."""

import pytest
from rest_framework.test import APIClient

from registry.mcp.config import ServerConfig
from tests.mcp.conftest import entry, mcp, reviewer, shifting_server

pytestmark = pytest.mark.django_db(transaction=True)

HINTS = {"destructiveHint": True, "readOnlyHint": False, "idempotentHint": True, "openWorldHint": False}


def test_annotations_are_on_the_review_page_and_in_the_api(manager, client):
    server = shifting_server(tools=[entry("wipe", annotations=HINTS), entry("peek")])
    manager.connect(ServerConfig.from_model(server))
    staff = reviewer()
    client.force_login(staff)
    page = client.get(f"/admin/registry/mcpserver/{server.pk}/tools/").content.decode()
    wipe = page[page.index(f"<td>{mcp('wipe', 'shifty')}</td>") :].split("</tr>")[0]
    for words in ("<li>destructive</li>", "<li>may change things</li>", "<li>idempotent</li>", "<li>closed world</li>"):
        assert words in wipe
    peek = page[page.index(f"<td>{mcp('peek', 'shifty')}</td>") :].split("</tr>")[0]
    assert "<li>destructive (default)</li>" in peek  # the spec's default when a server says nothing

    api = APIClient()
    api.force_authenticate(staff)
    tools = {t["name"]: t for t in api.get(f"/api/mcp/servers/{server.pk}/tools/").json()}
    assert tools[mcp("wipe", "shifty")]["annotations"] == HINTS
    assert len(tools[mcp("wipe", "shifty")]["definition_hash"]) == 64


ICON = "data:image/png;base64,iVBORw0KGgo="


def test_a_tools_title_and_icons_are_shown_and_a_remote_icon_is_never_fetched(manager, client):
    icons = [{"src": ICON, "mimeType": "image/png", "sizes": ["24x24"]}, {"src": "https://icons.example/x.svg"}]
    server = shifting_server(tools=[entry("wipe", title="Wipe the disk", icons=icons)])
    manager.connect(ServerConfig.from_model(server))
    staff = reviewer()
    client.force_login(staff)
    page = client.get(f"/admin/registry/mcpserver/{server.pk}/tools/").content.decode()
    assert '<strong class="mcp-title">Wipe the disk</strong>' in page
    assert f'<img class="mcp-icon" src="{ICON}"' in page
    assert '<small class="mcp-icon-url">icon: https://icons.example/x.svg</small>' in page
    assert 'src="https://icons.example' not in page

    api = APIClient()
    api.force_authenticate(staff)
    (wipe,) = api.get(f"/api/mcp/servers/{server.pk}/tools/").json()
    assert wipe["title"] == "Wipe the disk"
    assert [(i["src"], i["inline"]) for i in wipe["icons"]] == [(ICON, True), ("https://icons.example/x.svg", False)]
