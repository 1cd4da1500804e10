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


def access_token(browser: Browser, client_id: str, scope: str) -> str:
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
        },
    )
    assert token.status_code == 200, token.content
    return token.json()["access_token"]


def test_both_metadata_documents_point_a_client_to_the_authorization_server():
    browser = Browser()
    resource = browser.get("/.well-known/oauth-protected-resource/mcp/writing").json()
    assert resource["resource"].endswith("/mcp/writing")
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


def test_a_persons_token_for_one_bundle_reaches_that_bundle_and_no_other(served, make_tool):
    make_tool("echo_words", handlers.echo)
    bundle("writing", "echo_words")
    bundle("admin", "echo_words")
    browser = Browser()
    client_id = registered(browser)
    browser.force_login(get_user_model().objects.get(username="ann"))
    token = access_token(browser, client_id, "bundle:writing")

    async def use():
        async with client(served.url("writing"), token) as mcp:
            return await mcp.call_tool("echo_words", {})

    assert not asyncio.run(use()).is_error
    import httpx2

    other = httpx2.post(
        served.url("admin"),
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
    )
    assert other.status_code == 403 and "bundle:admin" in other.json()["error"]["message"]


def test_a_token_of_another_tenants_person_does_not_reach_this_tenants_bundle(served, make_tool):
    make_tool("echo_words", handlers.echo)
    bundle("writing", "echo_words")
    member("olga", "globex")
    browser = Browser()
    client_id = registered(browser)
    browser.force_login(get_user_model().objects.get(username="olga"))
    token = access_token(browser, client_id, "mcp")
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
