"""Stdio servers start with a minimal environment; secrets never leave through the API."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from registry.mcp.config import ServerConfig
from registry.models import MCPServer, TenantMembership
from tests.conftest import TENANT, text
from tests.mcp.conftest import DEMO, add_server, mcp

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_stdio_server_inherits_none_of_our_environment(manager, call, monkeypatch):
    monkeypatch.setenv("DATABASE_PASSWORD", "hunter2")
    manager.connect(ServerConfig.from_model(add_server(env={"API_KEY": "its-own"})))
    assert text(call(mcp("env"), variable="DATABASE_PASSWORD")) == "<unset>"
    assert text(call(mcp("env"), variable="API_KEY")) == "its-own"
    assert text(call(mcp("env"), variable="PATH")) != "<unset>"


def client_for(username, *, staff=False, tenant=TENANT):
    user = get_user_model().objects.create_user(username, is_staff=staff)
    TenantMembership.objects.create(user=user, tenant_id=tenant)
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_a_non_staff_user_may_not_create_a_stdio_server():
    response = client_for("ursula").post(
        "/api/mcp/servers/", {"name": "x", "transport": "stdio", "command": "/bin/sh", "args": []}, format="json"
    )
    assert response.status_code == 403


def test_a_non_staff_user_may_not_change_a_stdio_servers_command():
    server = add_server()
    response = client_for("ursula").patch(f"/api/mcp/servers/{server.pk}/", {"command": "/bin/sh"}, format="json")
    assert response.status_code == 403
    assert MCPServer.objects.get(pk=server.pk).command != "/bin/sh"


def test_a_non_staff_user_may_not_store_a_command_on_an_http_server_to_switch_to_stdio_later():
    ursula = client_for("ursula")
    created = ursula.post(
        "/api/mcp/servers/",
        {
            "name": "x1",
            "transport": "streamable_http",
            "url": "https://example.com/mcp",
            "command": "/bin/sh",
            "args": ["-c", "id"],
        },
        format="json",
    )
    assert (created.status_code, created.json()["detail"]) == (
        403,
        "only staff may set args, command: they define a process to start",
    )
    assert not MCPServer.objects.filter(name="x1").exists()


def test_a_non_staff_user_may_not_switch_a_server_to_stdio():
    server = add_server(
        "web", transport="streamable_http", url="https://example.com/mcp", command="", staff_owned=False
    )
    response = client_for("ursula").patch(f"/api/mcp/servers/{server.pk}/", {"transport": "stdio"}, format="json")
    assert (response.status_code, response.json()["detail"]) == (
        403,
        "only staff may create a stdio server or switch a server to stdio",
    )
    assert MCPServer.objects.get(pk=server.pk).transport == "streamable_http"


def test_a_non_staff_user_may_not_repoint_a_server_allowed_on_private_addresses():
    server = add_server(
        "lan",
        transport="streamable_http",
        url="http://10.0.0.5/mcp",
        command="",
        allow_private_network=True,
        staff_owned=False,
    )
    response = client_for("ursula").patch(
        f"/api/mcp/servers/{server.pk}/", {"url": "http://10.0.0.9/mcp"}, format="json"
    )
    assert response.status_code == 403 and "only staff may change its url" in response.json()["detail"]


def test_a_non_staff_user_may_switch_a_server_of_his_own_off():
    server = add_server(staff_owned=False)
    response = client_for("ursula").patch(f"/api/mcp/servers/{server.pk}/", {"enabled": False}, format="json")
    assert response.status_code == 200 and MCPServer.objects.get(pk=server.pk).enabled is False


def test_staff_may_create_a_stdio_server_and_its_env_is_never_echoed():
    response = client_for("sam", staff=True).post(
        "/api/mcp/servers/",
        {"name": "demo", "transport": "stdio", "command": "python", "args": [DEMO], "env": {"TOKEN": "s3cret"}},
        format="json",
    )
    assert response.status_code == 201
    assert "s3cret" not in response.content.decode() and response.json()["env_keys"] == ["TOKEN"]
    listed = client_for("sue", staff=True).get("/api/mcp/servers/")
    assert "s3cret" not in listed.content.decode()


def test_a_url_pointing_at_a_private_address_is_refused_by_the_api():
    response = client_for("ursula").post(
        "/api/mcp/servers/",
        {"name": "meta", "transport": "streamable_http", "url": "http://169.254.169.254/latest"},
        format="json",
    )
    assert response.status_code == 403 and "link-local" in response.content.decode()  # docs/api.md
