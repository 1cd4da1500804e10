"""A plain user can neither switch review off nor take a staff server (or its names) over."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from registry.mcp import services
from registry.mcp.config import ServerConfig
from registry.models import MCPServer, TenantMembership, ToolDefinition, ToolStatus
from tests.conftest import OTHER_TENANT, TENANT, text
from tests.mcp.conftest import entry, mcp, reviewer, shifting_server

pytestmark = pytest.mark.django_db(transaction=True)


def user(username, *, staff=False, tenant=TENANT):
    account = get_user_model().objects.create_user(username, is_staff=staff)
    TenantMembership.objects.create(user=account, tenant_id=tenant)
    return account


def api(account):
    client = APIClient()
    client.force_authenticate(account)
    return client


@pytest.fixture
def staff_server():
    return shifting_server(tools=[entry("read")])


def test_a_plain_user_may_not_switch_a_server_to_auto_approval(staff_server):
    client = api(user("ursula"))
    response = client.patch(f"/api/mcp/servers/{staff_server.pk}/", {"approval_policy": "auto"}, format="json")
    assert response.status_code == 403
    assert MCPServer.objects.get(pk=staff_server.pk).approval_policy == "manual"
    his_own = shifting_server("his", staff_owned=False)
    response = client.patch(f"/api/mcp/servers/{his_own.pk}/", {"approval_policy": "auto"}, format="json")
    assert response.status_code == 403 and "approval_policy" in response.json()["detail"]
    assert MCPServer.objects.get(pk=his_own.pk).approval_policy == "manual"


def test_a_plain_user_may_not_create_a_server_that_approves_itself():
    response = api(user("ursula")).post(
        "/api/mcp/servers/",
        {
            "name": "mine",
            "transport": "streamable_http",
            "url": "https://93.184.215.14/mcp",
            "approval_policy": "auto",
        },
        format="json",
    )
    assert response.status_code == 403 and "approval_policy" in response.json()["detail"]
    assert not MCPServer.objects.filter(name="mine").exists()


def test_staff_without_the_approve_permission_may_not_set_the_policy_either(staff_server):
    with pytest.raises(services.PermissionDenied, match="approve_mcp_tool"):
        services.update_server(staff_server, acting_user=user("sam", staff=True), approval_policy="auto")
    services.update_server(staff_server, acting_user=reviewer(), approval_policy="auto")
    assert MCPServer.objects.get(pk=staff_server.pk).approval_policy == "auto"


@pytest.mark.parametrize("verb", ["delete", "disable", "connect", "disconnect"])
def test_a_plain_user_may_not_touch_a_server_staff_created(staff_server, verb):
    client = api(user("ursula"))
    url = f"/api/mcp/servers/{staff_server.pk}/"
    response = {
        "delete": lambda: client.delete(url),
        "disable": lambda: client.patch(url, {"enabled": False}, format="json"),
        "connect": lambda: client.post(f"{url}connect/"),
        "disconnect": lambda: client.post(f"{url}disconnect/"),
    }[verb]()
    assert response.status_code == 403, response.content
    assert "staff created" in response.json()["detail"]
    assert MCPServer.objects.get(pk=staff_server.pk).enabled


def test_the_creator_is_recorded_and_a_plain_users_server_is_his_to_manage():
    ursula = user("ursula")
    client = api(ursula)
    created = client.post(
        "/api/mcp/servers/",
        {"name": "mine", "transport": "streamable_http", "url": "https://93.184.215.14/mcp"},
        format="json",
    )
    assert created.status_code == 201, created.content
    server = MCPServer.objects.get(name="mine")
    assert (server.created_by_id, server.staff_owned) == (ursula.pk, False)
    assert client.patch(f"/api/mcp/servers/{server.pk}/", {"enabled": False}, format="json").status_code == 200
    assert client.delete(f"/api/mcp/servers/{server.pk}/").status_code == 204


def test_two_tenants_may_each_have_a_server_of_one_name_and_neither_learns_of_the_other(manager, call):
    theirs = shifting_server("github", tools=[entry("search")], tenant_id=OTHER_TENANT, approval_policy="auto")
    manager.connect(ServerConfig.from_model(theirs))
    created = api(user("sam", staff=True)).post(
        "/api/mcp/servers/",
        {
            "name": "github",
            "transport": "streamable_http",
            "url": "https://93.184.215.14/mcp",
        },
        format="json",
    )
    assert created.status_code == 201, created.content  # no "already exists": nothing to learn
    ours = MCPServer.objects.get(name="github", tenant_id=TENANT)
    MCPServer.objects.filter(pk=ours.pk).update(
        transport="stdio", command=theirs.command, args=theirs.args, approval_policy="auto", url=""
    )
    manager.connect(ServerConfig.from_model(MCPServer.objects.get(pk=ours.pk)))
    assert text(call(mcp("search", "github"))) == "search ran"
    assert text(call(mcp("search", "github", OTHER_TENANT), tenant=OTHER_TENANT)) == "search ran"
    assert mcp("search", "github") != mcp("search", "github", OTHER_TENANT)
    assert "unknown tool" in call(mcp("search", "github", OTHER_TENANT)).content


def test_a_new_server_reusing_a_deleted_ones_name_inherits_no_approval(manager, call):
    old = shifting_server("files", tools=[entry("read")], approval_policy="auto")
    manager.connect(ServerConfig.from_model(old))
    assert text(call(mcp("read", "files"))) == "read ran"
    services.delete_server(old, acting_user=reviewer())

    new = shifting_server("files", tools=[entry("read")])  # same name, same tool, manual review
    manager.connect(ServerConfig.from_model(new))
    row = ToolDefinition.objects.live().get(name=mcp("read", "files"))
    assert (row.status, row.created_by) == (ToolStatus.TESTING, f"mcp:{new.pk}")
    assert "unknown tool" in call(mcp("read", "files")).content
