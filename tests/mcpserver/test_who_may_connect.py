"""Never anonymous, never another tenant's bundle, never a rebinding page: refused before the SDK."""

import httpx2 as httpx
import pytest

from tests.mcpserver.conftest import bundle

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, json=INITIALIZE, headers={**ACCEPT, **headers}, timeout=30)


def test_a_request_without_a_token_is_refused_and_told_where_to_authorize(served):
    answer = post(served.url())
    assert answer.status_code == 401
    metadata = f'resource_metadata="http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource/mcp"'
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and metadata in challenge and "error=" not in challenge
    assert "authentication required" in answer.json()["error"]["message"]


def test_an_unknown_token_is_refused_as_an_invalid_token(served):
    answer = post(served.url(), Authorization="Bearer not-a-token")
    assert answer.status_code == 401 and 'error="invalid_token"' in answer.headers["www-authenticate"]


def test_a_user_of_another_tenant_cannot_reach_a_bundle(served, olga):
    bundle("writing", "plan")
    answer = post(served.url("writing"), Authorization=f"Bearer {olga}")
    assert answer.status_code == 404
    assert "no bundle 'writing'" in answer.json()["error"]["message"]


def test_a_disabled_bundle_is_not_served(served, ann):
    bundle("writing", "plan", enabled=False)
    assert post(served.url("writing"), Authorization=f"Bearer {ann}").status_code == 404


def test_a_rebinding_host_is_refused_even_with_a_valid_token(served, ann):
    answer = post(served.url(), Authorization=f"Bearer {ann}", Host="evil.example.com")
    assert answer.status_code == 403


def test_a_foreign_origin_is_refused_and_the_servers_own_origin_accepted(served, ann):
    own = f"http://127.0.0.1:{served.port}"
    assert post(served.url(), Authorization=f"Bearer {ann}", Origin="http://evil.example.com").status_code == 403
    assert post(served.url(), Authorization=f"Token {ann}", Origin=own).status_code == 200


def test_a_path_below_a_bundle_is_not_an_endpoint(served, ann):
    assert post(served.url("writing") + "more/", Authorization=f"Bearer {ann}").status_code == 404


def test_requests_past_the_users_rest_rate_are_refused_with_retry_after(served, ann, settings):
    from django.core.cache import cache

    cache.clear()
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "user": "2/min"},
    }
    answers = [post(served.url(), Authorization=f"Bearer {ann}").status_code for _ in range(3)]
    refused = post(served.url(), Authorization=f"Bearer {ann}")
    assert answers[:2] == [200, 200] and refused.status_code == 429
    assert refused.headers["retry-after"] == "1"


def test_a_session_answers_only_the_token_that_opened_it(served, ann):
    from tests.mcpserver.conftest import member

    bob = member("bob", "acme")
    opened = post(served.url(), Authorization=f"Bearer {ann}")
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    headers = {**ACCEPT, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    borrowed = httpx.post(served.url(), json=listing, headers={**headers, "Authorization": f"Bearer {bob}"})
    assert borrowed.status_code == 404
