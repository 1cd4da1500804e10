"""The chat page, the tool playground and the telemetry pages, through Django's test client."""

import re

import pytest
from django.contrib.auth import get_user_model

from conversations.models import Conversation, ConversationEvent
from registry.models import TenantMembership, ToolExecutionLog
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db


@pytest.fixture
def member(client):
    user = get_user_model().objects.create_user("ann", password="pw")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    client.force_login(user)
    return user


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("boss", password="pw", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    client.force_login(user)
    return user


def test_the_chat_page_needs_a_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_login_page_signs_a_user_in(client):
    get_user_model().objects.create_user("ann", password="a-good-password")
    response = client.post("/login/", {"username": "ann", "password": "a-good-password"})
    assert response.status_code == 302 and response["Location"] == "/"


def test_a_new_conversation_opens_in_the_chosen_mode(client, member):
    response = client.post("/c/new/", {"mode": "agentic"})
    conversation = Conversation.objects.get(user=member)
    assert response["Location"] == f"/c/{conversation.pk}/"
    assert conversation.mode == "agentic" and conversation.tenant_id == TENANT


def test_the_chat_page_lists_only_my_conversations(client, member):
    mine = Conversation.objects.create(tenant_id=TENANT, user=member, title="Mine")
    other = get_user_model().objects.create_user("eve", password="pw")
    Conversation.objects.create(tenant_id=OTHER_TENANT, user=other, title="Theirs")
    page = client.get(f"/c/{mine.pk}/").content.decode()
    assert "Mine" in page and "Theirs" not in page


def test_another_users_conversation_page_is_not_found(client, member):
    other = get_user_model().objects.create_user("eve", password="pw")
    theirs = Conversation.objects.create(tenant_id=TENANT, user=other)
    assert client.get(f"/c/{theirs.pk}/").status_code == 404


def test_offline_mode_is_explained_on_the_page(client, member):
    conversation = Conversation.objects.create(tenant_id=TENANT, user=member)
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    assert 'id="offline-notice"' in page and "offline mode" in page


def test_a_user_without_a_tenant_is_told_so(client):
    client.force_login(get_user_model().objects.create_user("lone", password="pw"))
    assert "belongs to no tenant" in client.get("/").content.decode()


def test_pages_load_no_asset_from_another_host(client, staff):
    conversation = Conversation.objects.create(tenant_id=TENANT, user=staff)
    for url in ("/", f"/c/{conversation.pk}/", "/playground/", "/playground/search_tools/", "/telemetry/", "/login/"):
        page = client.get(url).content.decode()
        assert not re.search(r'(src|href)="(https?:)?//', page), url


@pytest.mark.parametrize("url", ["/playground/", "/playground/search_tools/", "/telemetry/"])
def test_staff_pages_refuse_other_users(client, member, url):
    assert client.get(url).status_code == 302


def test_the_playground_lists_every_tool_the_registry_knows(client, staff):
    page = client.get("/playground/").content.decode()
    assert "search_tools" in page and "plan" in page


def test_the_playground_runs_a_tool_and_shows_render_raw_and_log_row(client, staff):
    response = client.post("/playground/search_tools/", {"inputs": '{"query": "plan the steps"}', "tenant": TENANT})
    page = response.content.decode()
    assert response.status_code == 200
    assert 'id="rendered"' in page and "✓ ok." in page
    assert 'id="raw"' in page and 'id="log-row"' in page
    assert ToolExecutionLog.objects.get(tool_name="search_tools").user_id == str(staff.pk)


def test_the_playground_explains_bad_json(client, staff):
    response = client.post("/playground/search_tools/", {"inputs": '{"query": '})
    assert response.status_code == 400
    assert "inputs are not valid JSON" in response.content.decode()


def test_telemetry_shows_per_tool_outcomes_and_filters_the_log(client, staff, call):
    call("search_tools", query="plan")
    call("search_tools", limit=0)
    call("no_such_tool")
    page = client.get("/telemetry/", {"tool": "search_tools"}).content.decode()
    assert re.search(r"<td>search_tools</td><td>1</td><td>1</td><td>0</td>", page)
    log = page.split('id="log"')[1]
    assert "no_such_tool" not in log and log.count("<td>search_tools</td>") == 2


def test_the_conversation_view_replays_events_in_order(client, staff):
    conversation = Conversation.objects.create(tenant_id=TENANT, user=staff)
    for n, kind in enumerate(["user_message", "tool_call", "done"], 1):
        ConversationEvent.objects.create(conversation=conversation, turn=1, sequence=n, event_type=kind, data={"n": n})
    page = client.get(f"/telemetry/conversations/{conversation.pk}/").content.decode()
    assert page.index("1.1 user_message") < page.index("1.2 tool_call") < page.index("1.3 done")


def test_a_document_upload_lands_in_my_own_uploads_for_indexing(client, member, settings, tmp_path):
    from pathlib import Path

    from django.core.files.uploadedfile import SimpleUploadedFile

    from datacatalog.models import GeneratedFile

    settings.EUNICE_FILES_DIR = str(tmp_path)
    upload = SimpleUploadedFile("../../notes.md", b"# Rain\nOslo is wet.", content_type="text/markdown")
    response = client.post("/api/documents/", {"file": upload})
    assert response.status_code == 201 and response.json()["name"] == "notes.md"
    row = GeneratedFile.objects.get(filename="notes.md")
    assert row.user == member and row.conversation is None
    path = Path(row.path)
    assert path.read_bytes() == b"# Rain\nOslo is wet."
    assert path.parent == tmp_path / TENANT / "users" / str(member.pk) / "uploads"
    assert client.get("/api/documents/").json() == {"uploads": ["notes.md"]}


def test_a_file_that_is_not_a_document_is_refused_by_the_document_upload(client, member):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post("/api/documents/", {"file": SimpleUploadedFile("run.sh", b"rm -rf /")})
    assert response.status_code == 400 and "not a document" in response.json()["error"]


def test_the_playground_keeps_staff_to_their_own_tenant(client, staff, settings):
    from registry.custom_tools import approve_custom_tool, register_custom_tool

    settings.FEATURE_FLAGS = {**settings.FEATURE_FLAGS, "custom_tools_enabled": True}
    boss = get_user_model().objects.create_user("root", is_staff=True, is_superuser=True)
    tool = register_custom_tool(
        name="their_secret",
        code="result = 'globex data'",
        description="Theirs.",
        input_schema={"type": "object", "properties": {}},
        tenant_id=OTHER_TENANT,
    )
    approve_custom_tool(tool, acting_user=boss)
    assert "their_secret" not in client.get("/playground/").content.decode()
    response = client.post("/playground/their_secret/", {"inputs": "{}", "tenant": OTHER_TENANT})
    assert response.status_code == 404 and not ToolExecutionLog.objects.filter(tool_name="their_secret").exists()
    refused = client.post("/playground/search_tools/", {"inputs": '{"query": "plan"}', "tenant": OTHER_TENANT})
    assert refused.status_code == 403 and not ToolExecutionLog.objects.filter(tool_name="search_tools").exists()


def test_the_timeline_of_a_conversation_is_its_owners_only(client, member):
    mine = Conversation.objects.create(tenant_id=TENANT, user=member)
    other = get_user_model().objects.create_user("eve", password="pw")
    TenantMembership.objects.create(user=other, tenant_id=TENANT)
    theirs = Conversation.objects.create(tenant_id=TENANT, user=other)
    assert client.get(f"/c/{mine.pk}/timeline/").json() == {"chunks": [], "running": False, "approvals": []}
    assert client.get(f"/c/{theirs.pk}/timeline/").status_code == 404
    client.logout()
    assert client.get(f"/c/{mine.pk}/timeline/").status_code == 302


def test_a_tile_server_is_allowed_images_on_the_chat_page_only_when_configured(client, member, settings):
    conversation = Conversation.objects.create(tenant_id=TENANT, user=member)
    page = client.get(f"/c/{conversation.pk}/")
    assert '"tiles": ""' in page.content.decode() and "tile.example.org" not in page["Content-Security-Policy"]
    settings.EUNICE_MAP_TILES = "https://{s}.tile.example.org/{z}/{x}/{y}.png"
    page = client.get(f"/c/{conversation.pk}/")
    assert "https://*.tile.example.org" in page["Content-Security-Policy"]
    assert "{s}.tile.example.org/{z}/{x}/{y}.png" in page.content.decode()


@pytest.mark.parametrize("value", ["ftp://x/{z}/{x}/{y}", "https://x/tiles.png", 'https://x/{z}/{x}/{y}.png" onerror'])
def test_a_tile_url_that_is_no_template_is_refused_at_start(value, monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from eunice.env import env_tile_template

    monkeypatch.setenv("EUNICE_MAP_TILES", value)
    with pytest.raises(ImproperlyConfigured, match=r"EUNICE_MAP_TILES=.*\{z\}, \{x\} and \{y\}"):
        env_tile_template("EUNICE_MAP_TILES")
    monkeypatch.setenv("EUNICE_MAP_TILES", " https://tile.example.org/{z}/{x}/{y}.png ")
    assert env_tile_template("EUNICE_MAP_TILES") == "https://tile.example.org/{z}/{x}/{y}.png"
