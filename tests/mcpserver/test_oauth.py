"""A desktop client registers itself, a person consents with PKCE, and the access token
reaches exactly the bundles it was granted: the real SDK client uses it."""

import asyncio
import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client as Browser

from tests import handlers
from tests.mcpserver.conftest import bundle, client, member

pytestmark = pytest.mark.django_db(transaction=True)

REDIRECT = "http://127.0.0.1:33418/callback"


def registered(browser: Browser) -> str:
    answer = browser.post(
        "/o/register/",
        {
            "client_name": "Claude Desktop",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.content
    return answer.json()["client_id"]


def access_token(browser: Browser, client_id: str, scope: str, resource: str | None) -> str:
    """A token the person grants ``client_id`` for ``scope``, bound to ``resource`` (None: to none)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    asked = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "scope": scope,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s1",
        **({"resource": resource} if resource is not None else {}),
    }
    consent = browser.get("/o/authorize/", asked)
    assert consent.status_code == 200, consent.content[:500]
    granted = browser.post("/o/authorize/", {**asked, "allow": "Authorize"})
    assert granted.status_code == 302, granted.content[:500]
    code = parse_qs(urlsplit(granted["Location"]).query)["code"][0]
    token = browser.post(
        "/o/token/",
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": client_id,
            "code_verifier": verifier,
            **({"resource": resource} if resource is not None else {}),
        },
    )
    assert token.status_code == 200, token.content
    return token.json()["access_token"]


def test_both_metadata_documents_point_a_client_to_the_authorization_server():
    browser = Browser()
    resource = browser.get("/.well-known/oauth-protected-resource/mcp/writing").json()
    assert resource["resource"] == "http://testserver/mcp/writing"  # what a token is bound to
    server = browser.get("/.well-known/oauth-authorization-server").json()
    assert server["issuer"] in resource["authorization_servers"]
    assert server["registration_endpoint"].endswith("/o/register/")
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["scopes_supported"] == ["mcp"]  # no tenant's bundle names are published


def test_a_token_without_pkce_is_not_issued():
    browser = Browser()
    client_id = registered(browser)
    browser.force_login(get_user_model().objects.get(username="ann"))
    refused = browser.get(
        "/o/authorize/", {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "scope": "mcp"}
    )
    assert "error=invalid_request" in refused["Location"] and "Code+challenge+required" in refused["Location"]


@pytest.fixture(autouse=True)
def _ann(ann):
    return ann


def resource_of(served, bundle: str = "", host: str = "127.0.0.1") -> str:
    """The endpoint's resource identifier, as its protected-resource metadata names it."""
    return f"http://{host}:{served.port}/mcp" + (f"/{bundle}" if bundle else "")


def granted(scope: str, resource: str | None) -> str:
    """Ann's access token for a freshly registered desktop client."""
    browser = Browser()
    client_id = registered(browser)
    browser.force_login(get_user_model().objects.get(username="ann"))
    return access_token(browser, client_id, scope, resource)


def initialize(url: str, token: str, **headers: str):
    """A 2025-11-25 ``initialize`` with the token (200 once the endpoint admits it)."""
    import httpx2

    from tests.mcpserver.test_who_may_connect import ACCEPT, INITIALIZE

    return httpx2.post(url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {token}", **headers})


def test_a_token_bound_to_one_bundles_url_is_refused_at_another_bundle_and_told_where_to_look(served, make_tool):
    make_tool("echo_words", handlers.echo)
    bundle("writing", "echo_words")
    bundle("admin", "echo_words")
    token = granted("mcp", resource_of(served, "writing"))  # the scope reaches every bundle; the binding does not

    here, there = initialize(served.url("writing"), token), initialize(served.url("admin"), token)
    assert here.status_code == 200, here.text
    assert there.status_code == 401 and "issued for another resource" in there.json()["error"]["message"]
    metadata = f"http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource/mcp/admin"
    assert f'resource_metadata="{metadata}"' in there.headers["www-authenticate"]
    assert 'error="invalid_token"' in there.headers["www-authenticate"]


def test_a_token_bound_to_the_endpoint_at_one_host_is_refused_at_another(served, make_tool):
    make_tool("echo_words", handlers.echo)
    bundle("writing", "echo_words")
    token = granted("mcp", resource_of(served, "writing", host="localhost"))

    at_localhost = initialize(served.url("writing"), token, Host=f"localhost:{served.port}")
    at_loopback = initialize(served.url("writing"), token)
    assert at_localhost.status_code == 200, at_localhost.text
    assert at_loopback.status_code == 401 and "issued for another resource" in at_loopback.json()["error"]["message"]


def test_a_token_for_every_tools_url_does_not_reach_a_bundles_url(served, make_tool):
    make_tool("echo_words", handlers.echo)
    bundle("writing", "echo_words")
    token = granted("mcp", resource_of(served))

    assert initialize(served.url(), token).status_code == 200
    assert initialize(served.url("writing"), token).status_code == 401


def test_a_token_issued_without_a_resource_is_refused_and_told_to_ask_for_one(served, make_tool):
    make_tool("echo_words", handlers.echo)
    bundle("writing", "echo_words")
    token = granted("mcp", None)

    answer = initialize(served.url("writing"), token)
    assert answer.status_code == 401
    assert f"resource={resource_of(served, 'writing')}" in answer.json()["error"]["message"]


def test_a_persons_token_for_one_bundle_reaches_that_bundle_and_no_other(served, make_tool):
    make_tool("echo_words", handlers.echo)
    bundle("writing", "echo_words")
    bundle("admin", "echo_words")
    token = granted("bundle:writing", resource_of(served, "writing"))

    async def use():
        async with client(served.url("writing"), token) as mcp:
            return await mcp.call_tool("echo_words", {})

    assert not asyncio.run(use()).is_error
    # Bound to the admin bundle's URL, so that the scope decides.
    other = initialize(served.url("admin"), granted("bundle:writing", resource_of(served, "admin")))
    assert other.status_code == 403 and "bundle:admin" in other.json()["error"]["message"]


def test_a_token_of_another_tenants_person_does_not_reach_this_tenants_bundle(served, make_tool):
    make_tool("echo_words", handlers.echo)
    bundle("writing", "echo_words")
    member("olga", "globex")
    browser = Browser()
    client_id = registered(browser)
    browser.force_login(get_user_model().objects.get(username="olga"))
    token = access_token(browser, client_id, "mcp", resource_of(served, "writing"))
    import httpx2

    answer = httpx2.post(
        served.url("writing"),
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == 404


@pytest.mark.parametrize(
    ("redirect", "allowed"),
    [
        ("http://127.0.0.1:33418/callback", True),
        ("http://localhost:6274/oauth/callback", True),
        ("http://[::1]:8080/cb", True),
        ("https://client.example.com/cb", True),
        ("http://client.example.com/cb", False),
        ("http://127.0.0.1.evil.example/cb", False),
    ],
)
def test_a_client_registers_http_redirects_only_to_a_loopback_address(redirect, allowed):
    answer = Browser().post(
        "/o/register/",
        {
            "client_name": "a desktop client",
            "redirect_uris": [redirect],
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
        content_type="application/json",
    )
    if allowed:
        assert answer.status_code == 201, answer.content
    else:
        assert answer.status_code == 400
        assert "must go to a loopback address" in answer.json()["error_description"]
