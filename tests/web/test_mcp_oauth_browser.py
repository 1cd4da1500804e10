"""MCP OAuth in real Chromium against the local authorization server (tests/mcp/servers/oauth.py):
staff connect a tenant connection from the admin, and a plain user connects a per-user
server from the chat page; each comes back to Eunice's callback authorized."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from registry.models import MCPServer, TenantMembership
from tests.conftest import TENANT
from tests.mcp.conftest import OAUTH_SERVER, free_port
from tests.mcp.conftest import serving as serving_process
from tests.web.conftest import CHROMIUM
from tests.web.test_browser import sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(400),  # the server's start-up on a loaded machine included
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture
def protected():
    """The authorization server and its OAuth-protected MCP server; yields the MCP URL."""
    as_port, rs_port = free_port(), free_port()
    with serving_process([OAUTH_SERVER, str(as_port), str(rs_port)], "ready"):
        yield f"http://localhost:{rs_port}/mcp"


@pytest.fixture
def cast(protected):
    """Stella (staff) and Ann, and two servers behind the authorization server: one tenant
    connection, one per user. Made before the browser starts."""
    users = {}
    for name, staff in (("stella", True), ("ann", False)):
        users[name] = get_user_model().objects.create_user(name, password="a-good-password", is_staff=staff)
        TenantMembership.objects.create(user=users[name], tenant_id=TENANT)
    admin_rights = Permission.objects.filter(codename__in=["view_mcpserver", "change_mcpserver"])
    users["stella"].user_permissions.add(*admin_rights)
    common = {"tenant_id": TENANT, "transport": "streamable_http", "url": protected, "allow_private_network": True}
    servers = {
        kind: MCPServer.objects.create(name=f"{kind}-tools", authorization=kind, approval_policy="auto", **common)
        for kind in ("tenant", "user")
    }
    return users, servers


def test_staff_connect_in_the_admin_and_a_user_connects_from_the_chat_page(cast, server, browser_page):
    _, servers = cast  # the database is read through the pages: Playwright's loop owns this thread
    page = browser_page
    sign_in(page, server, "stella")
    page.goto(f"{server}/admin/registry/mcpserver/{servers['tenant'].pk}/change/")
    page.click("#mcp-oauth-connect-link")
    page.click("#mcp-oauth-connect")
    page.wait_for_selector("#mcp-oauth .ok")
    assert "Eunice is authorized" in page.inner_text("#mcp-oauth")
    page.goto(f"{server}/admin/registry/mcpserver/{servers['tenant'].pk}/change/")
    assert "authorized for the tenant" in page.inner_text(".field-oauth")

    page.context.clear_cookies()
    sign_in(page, server, "ann")
    page.click("#mcp-connections [data-server='user-tools'] a")
    page.click("#mcp-oauth-connect")
    page.wait_for_selector("#mcp-oauth .ok")
    page.goto(f"{server}/")
    assert "connected" in page.inner_text("#mcp-connections [data-server='user-tools']")
