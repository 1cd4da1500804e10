"""MCP OAuth against a real authorization server the tests start (tests/mcp/servers/oauth.py):
a tenant connection staff authorize, per-user connections, refresh, revoke, step-up with
its limit, and a wrong ``iss`` refused."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import urllib.request
from urllib.parse import urlsplit

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from registry.mcp import MCPError
from registry.mcp.config import ServerConfig
from registry.mcp.connection import Connection
from registry.mcp.http import pinned_client
from registry.mcp.oauth import MAX_STEP_UPS, FollowRedirect, GrantStore, MemoryStore
from registry.mcp.urls import check_url
from registry.models import MCPOAuthGrant, TenantMembership
from tests.conftest import TENANT, text
from tests.mcp.conftest import OAUTH_SERVER, WAIT, add_server, free_port, mcp, reviewer, serving

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def oauth_server(request):
    """Start the authorization server and the protected MCP server; yields a ``Servers``."""
    flags = getattr(request, "param", [])
    as_port, rs_port = free_port(), free_port()
    with serving([OAUTH_SERVER, str(as_port), str(rs_port), *flags], "ready"):
        yield Servers(f"http://127.0.0.1:{as_port}/", f"http://localhost:{rs_port}/mcp")


@dataclasses.dataclass
class Servers:
    issuer: str
    url: str

    def stats(self) -> dict:
        with urllib.request.urlopen(f"{self.issuer}stats", timeout=WAIT) as response:
            return json.load(response)


def person(username: str, *, staff: bool = False):
    """A signed-in browser of a user of the tenant."""
    if staff:
        user = reviewer(username)
    else:
        user = get_user_model().objects.create_user(username, password="pw")
        TenantMembership.objects.create(user=user, tenant_id=TENANT)
    browser = Client()
    browser.force_login(user)
    return user, browser


def authorization_url(browser: Client, server_id: int) -> str:
    """Press Connect: where the page sends the person on to."""
    started = browser.post(f"/mcp-oauth/{server_id}/connect/")
    assert started.status_code == 200, started.content.decode()[:500]
    return started.context["continue_url"]


def authorize_in_browser(browser: Client, server_id: int) -> str:
    """Press Connect, let the authorization server approve, come back to Eunice's callback;
    the page Eunice shows at the end."""
    with httpx2.Client(follow_redirects=False, trust_env=False) as http:
        approved = http.get(authorization_url(browser, server_id))
    assert approved.status_code == 302
    back = urlsplit(approved.headers["location"])
    assert back.path == "/mcp-oauth/callback/"
    return browser.get(f"{back.path}?{back.query}").content.decode()


def oauth_server_row(servers: Servers, authorization: str):
    return add_server(
        "guarded",
        transport="streamable_http",
        command="",
        args=[],
        url=servers.url,
        allow_private_network=True,
        authorization=authorization,
    )


def as_user(call, user, name: str):
    return call(mcp(name, "guarded"), context={"user_id": str(user.pk)})


def test_staff_authorize_a_tenant_connection_and_every_user_calls_with_it(manager, oauth_server, call):
    server = oauth_server_row(oauth_server, "tenant")
    _, browser = person("stella", staff=True)
    assert "Eunice is authorized" in authorize_in_browser(browser, server.pk)
    assert manager.wait_connected(server.pk, WAIT)
    plain, _ = person("paul")
    assert text(as_user(call, plain, "whoami")) == "1"
    grant = MCPOAuthGrant.objects.get(server=server)
    assert grant.user is None and grant.issuer == oauth_server.issuer


def test_the_tokens_are_sealed_at_rest(manager, oauth_server):
    from django.db import connection

    server = oauth_server_row(oauth_server, "tenant")
    _, browser = person("stella", staff=True)
    authorize_in_browser(browser, server.pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT tokens, client FROM mcp_oauth_grants")
        tokens, client = cursor.fetchone()
    assert "access-" not in tokens and "refresh-" not in tokens and "client_id" not in client


def test_a_plain_user_cannot_authorize_a_tenant_connection(manager, oauth_server):
    server = oauth_server_row(oauth_server, "tenant")
    _, browser = person("paul")
    refused = browser.post(f"/mcp-oauth/{server.pk}/connect/")
    assert refused.status_code == 403 and "only staff" in refused.content.decode()


def test_a_per_user_server_runs_each_call_with_the_callers_own_token(manager, oauth_server, call):
    server = oauth_server_row(oauth_server, "user")
    ann, ann_browser = person("ann")
    bob, bob_browser = person("bob")
    authorize_in_browser(ann_browser, server.pk)
    assert manager.wait_connected(server.pk, WAIT)

    hint = as_user(call, bob, "whoami")
    assert "needs your authorization" in hint.content
    assert f"/mcp-oauth/{server.pk}/connect/" in hint.content

    authorize_in_browser(bob_browser, server.pk)
    assert {text(as_user(call, ann, "whoami")), text(as_user(call, bob, "whoami"))} == {"1", "2"}


def test_a_revoked_user_is_asked_to_authorize_again(manager, oauth_server, call):
    server = oauth_server_row(oauth_server, "user")
    ann, browser = person("ann")
    authorize_in_browser(browser, server.pk)
    assert manager.wait_connected(server.pk, WAIT)
    assert text(as_user(call, ann, "whoami")) == "1"

    assert browser.post(f"/mcp-oauth/{server.pk}/revoke/").status_code == 200
    assert not MCPOAuthGrant.objects.filter(server=server, user=ann).exists()
    assert oauth_server.stats()["revocation_requests"] == 1  # the authorization server was asked too
    assert "needs your authorization" in text(as_user(call, ann, "whoami"))


def test_a_callback_for_someone_elses_authorization_is_refused(manager, oauth_server):
    server = oauth_server_row(oauth_server, "user")
    _, ann_browser = person("ann")
    _, bob_browser = person("bob")
    with httpx2.Client(follow_redirects=False, trust_env=False) as http:
        back = urlsplit(http.get(authorization_url(ann_browser, server.pk)).headers["location"])
    refused = bob_browser.get(f"{back.path}?{back.query}")
    assert refused.status_code == 400 and "not started by you" in refused.content.decode()
    assert not MCPOAuthGrant.objects.filter(server=server).exclude(tokens="").exists()


def test_an_expired_token_is_refreshed_without_a_person(manager, oauth_server, call):
    server = oauth_server_row(oauth_server, "tenant")
    _, browser = person("stella", staff=True)
    authorize_in_browser(browser, server.pk)
    assert manager.wait_connected(server.pk, WAIT)
    first = MCPOAuthGrant.objects.get(server=server).tokens["access_token"]
    MCPOAuthGrant.objects.filter(server=server).update(expires_at=timezone.now())  # an hour later

    manager.reconnect(ServerConfig.from_model(server))  # a new process's connection: tokens from the store
    assert (oauth_server.stats()["authorizations"], oauth_server.stats()["refreshes"]) == (1, 1)
    assert MCPOAuthGrant.objects.get(server=server).tokens["access_token"] != first
    assert text(call(mcp("whoami", "guarded"))) == "2"


def test_one_process_at_a_time_may_refresh_a_grant(manager):
    server = add_server("guarded", transport="streamable_http", command="", args=[], url="http://x.example/mcp")
    MCPOAuthGrant.objects.create(server=server, issuer="https://as.example", tokens={"access_token": "a"})
    here, there = GrantStore(server.pk, None), GrantStore(server.pk, None)
    assert asyncio.run(here.claim_refresh()) is True
    assert asyncio.run(there.claim_refresh()) is False
    asyncio.run(here.release_refresh())
    assert asyncio.run(there.claim_refresh()) is True


def headless(manager, servers: Servers) -> Connection:
    """A connection that authorizes without a browser, keeping its grant in memory."""
    flow = FollowRedirect(
        lambda: pinned_client(check_url(servers.url, allow_private=True), None, elsewhere=True, allow_private=True)
    )
    config = ServerConfig(
        id=0,
        name="guarded",
        tenant_id=TENANT,
        transport="streamable_http",
        url=servers.url,
        allow_private=True,
        call_timeout=WAIT,
        authorization="tenant",
        oauth_flow=flow,
        oauth_store=MemoryStore(),
    )

    async def nothing(_tools):
        pass

    connection = Connection(config, check_url(servers.url, allow_private=True), on_tools_changed=nothing, on_lost=print)
    manager._run(connection.open(WAIT), WAIT + 5)
    return connection


def test_a_call_needing_more_scope_steps_up_and_succeeds(manager, oauth_server):
    connection = headless(manager, oauth_server)
    try:
        result = manager._run(connection.call("admin", {}, WAIT), WAIT)
        assert result.content[0].text == "admin done"
        assert oauth_server.stats()["authorizations"] == 2
    finally:
        manager._run(connection.close(), WAIT)


@pytest.mark.parametrize("oauth_server", [["--deny-admin"]], indirect=True)
def test_step_ups_stop_after_the_limit(manager, oauth_server):
    connection = headless(manager, oauth_server)
    try:
        for _ in range(MAX_STEP_UPS + 3):
            with pytest.raises(Exception):  # noqa: B017 - the SDK's error for the 403 that stands
                manager._run(connection.call("admin", {}, WAIT), WAIT)
        assert oauth_server.stats()["authorizations"] == 1 + MAX_STEP_UPS
        assert isinstance(manager._run(connection.call("whoami", {}, WAIT), WAIT).content[0].text, str)
    finally:
        manager._run(connection.close(), WAIT)


@pytest.mark.parametrize("oauth_server", [["--wrong-iss"]], indirect=True)
def test_an_authorization_response_from_the_wrong_issuer_is_refused(manager, oauth_server):
    with pytest.raises(MCPError, match="iss mismatch"):
        headless(manager, oauth_server)
    assert oauth_server.stats()["authorizations"] == 1


def test_the_client_metadata_document_names_the_callback(client, settings):
    settings.EUNICE_PUBLIC_URL = "https://eunice.example.com"
    document = client.get("/mcp-oauth/client-metadata.json").json()
    assert document["client_id"] == "https://eunice.example.com/mcp-oauth/client-metadata.json"
    assert document["redirect_uris"] == ["https://eunice.example.com/mcp-oauth/callback/"]


def test_a_callback_after_the_authorization_expired_is_refused(manager):
    from datetime import timedelta

    from registry.models import MCPOAuthRequest

    server = add_server("guarded", transport="streamable_http", command="", args=[], url="http://x.example/mcp")
    ann, browser = person("ann")
    an_hour_ago = timezone.now() - timedelta(hours=1)
    MCPOAuthRequest.objects.create(state="s1", server=server, user=ann, created_at=an_hour_ago)
    refused = browser.get("/mcp-oauth/callback/?state=s1&code=c")
    assert refused.status_code == 400 and "expired" in refused.content.decode()


def test_staff_revoke_a_users_grant_in_the_admin_and_it_is_audited(manager):
    from django.contrib.auth.models import Permission

    from registry.models import MCPAuditLog

    server = add_server("guarded", transport="streamable_http", command="", args=[], url="http://x.example/mcp")
    ann, _ = person("ann")
    grant = MCPOAuthGrant.objects.create(
        server=server, user=ann, issuer="https://as.example", tokens={"access_token": "a"}
    )
    stella, browser = person("stella", staff=True)
    stella.user_permissions.add(*Permission.objects.filter(codename__in=["view_mcpoauthgrant", "delete_mcpoauthgrant"]))

    assert browser.post(f"/admin/registry/mcpoauthgrant/{grant.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not MCPOAuthGrant.objects.filter(pk=grant.pk).exists()
    assert MCPAuditLog.objects.filter(action="oauth_revoke", actor="stella", details__owner="ann").exists()


def test_staff_of_another_tenant_do_not_see_the_grants(manager):
    from django.contrib.auth.models import Permission

    from tests.conftest import OTHER_TENANT

    server = add_server("guarded", transport="streamable_http", command="", args=[], url="http://x.example/mcp")
    MCPOAuthGrant.objects.create(server=server, issuer="https://as.example", tokens={"access_token": "a"})
    outsider = reviewer("oscar", tenant=OTHER_TENANT)
    outsider.user_permissions.add(*Permission.objects.filter(codename="view_mcpoauthgrant"))
    browser = Client()
    browser.force_login(outsider)
    page = browser.get("/admin/registry/mcpoauthgrant/")
    assert page.status_code == 200 and "as.example" not in page.content.decode()


def test_a_per_user_servers_listing_refreshes_the_grant_it_borrows_in_place(manager, oauth_server):
    server = oauth_server_row(oauth_server, "user")
    ann, browser = person("ann")
    authorize_in_browser(browser, server.pk)
    assert manager.wait_connected(server.pk, WAIT)
    MCPOAuthGrant.objects.filter(server=server).update(expires_at=timezone.now())

    manager.reconnect(ServerConfig.from_model(server))
    assert oauth_server.stats()["refreshes"] == 1
    assert list(MCPOAuthGrant.objects.filter(server=server).values_list("user", flat=True)) == [ann.pk]
