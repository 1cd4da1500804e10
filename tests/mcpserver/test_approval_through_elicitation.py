"""A served call that needs a person's approval: URL elicitation to the approval page, or its link.

The person decides on the page by a real POST as themselves (signed in, with the CSRF
token), against the running server; the MCP client is the real SDK's.
"""

import asyncio
import re
from contextlib import asynccontextmanager

import mcp_types as types
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from registry.models import ApprovalRule, ApprovalStatus, PendingApproval
from tests import handlers
from tests.conftest import OTHER_TENANT, TENANT
from tests.mcpserver.conftest import MODES, Served, bundle, client, member

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer"}}}


@pytest.fixture
def wire_money(make_tool):
    make_tool("wire_money", handlers.echo, input_schema=SCHEMA)
    bundle("payments", "wire_money")
    ApprovalRule.objects.create(
        name="money moves need a person", tenant_id=TENANT, tool_name="wire_money", note="check the amount"
    )


@asynccontextmanager
async def signed_in(base: str, username: str):
    """An HTTP client signed in as ``username`` (password ``x``) through the login page."""
    import httpx2

    async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
        page = await http.get("/login/")
        form = {"username": username, "password": "x", "csrfmiddlewaretoken": _field(page.text, "csrfmiddlewaretoken")}
        assert (await http.post("/login/", data=form)).status_code == 302
        yield http


async def decide_on_page(http, url: str, decision: str, **fields: str):
    """Read the page as the person, then POST their decision with the page's token and hash."""
    page = await http.get(url)
    assert page.status_code == 200, page.text
    args_hash = _field(page.text, "args_hash")
    data = {
        "csrfmiddlewaretoken": _field(page.text, "csrfmiddlewaretoken"),
        "decision": decision,
        "args_hash": args_hash,
        **fields,
    }
    return await http.post(url, data=data, follow_redirects=True)


def _field(html: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]+)"', html)
    assert found is not None, f"the page has no {name} field"
    return found.group(1)


@pytest.mark.parametrize("mode", MODES)
def test_a_client_that_elicits_urls_sends_the_person_to_the_page_and_gets_the_approved_calls_outcome(
    served, ann, wire_money, mode
):
    asked = []

    async def elicit(context, params):
        asked.append(params)
        async with signed_in(f"http://127.0.0.1:{served.port}", "ann") as http:
            decided = await decide_on_page(http, params.url, "approve")
        assert decided.status_code == 200 and "echo {&#x27;amount&#x27;: 5}" in decided.text
        return types.ElicitResult(action="accept")

    async def use():
        async with client(served.url("payments"), ann, mode, elicitation_callback=elicit) as mcp:
            return await mcp.call_tool("wire_money", {"amount": 5})

    called = asyncio.run(use())
    assert not called.is_error and "echo {'amount': 5}" in called.content[0].text
    (params,) = asked
    row = PendingApproval.objects.get(tool_name="wire_money")
    assert params.mode == "url" and params.url == f"http://127.0.0.1:{served.port}/approvals/{row.pk}/"
    assert (row.status, row.decided_by_id) == (ApprovalStatus.APPROVED, row.user_id)


@pytest.mark.parametrize("mode", MODES)
def test_the_person_may_edit_the_call_and_the_client_is_told_what_ran(served, ann, wire_money, mode):
    async def elicit(context, params):
        async with signed_in(f"http://127.0.0.1:{served.port}", "ann") as http:
            await decide_on_page(http, params.url, "edit", arguments='{"amount": 3}')
        return types.ElicitResult(action="accept")

    async def use():
        async with client(served.url("payments"), ann, mode, elicitation_callback=elicit) as mcp:
            return await mcp.call_tool("wire_money", {"amount": 500})

    called = asyncio.run(use())
    assert not called.is_error and "echo {'amount': 3}" in called.content[0].text
    assert "ann edited the call" in called.content[1].text


@pytest.mark.parametrize("mode", MODES)
def test_a_call_the_person_rejects_on_the_page_answers_with_their_reason(served, ann, wire_money, mode):
    async def elicit(context, params):
        async with signed_in(f"http://127.0.0.1:{served.port}", "ann") as http:
            await decide_on_page(http, params.url, "reject", reason="not this month")
        return types.ElicitResult(action="accept")

    async def use():
        async with client(served.url("payments"), ann, mode, elicitation_callback=elicit) as mcp:
            return await mcp.call_tool("wire_money", {"amount": 5})

    called = asyncio.run(use())
    assert called.is_error and "ann rejected it: not this month" in called.content[0].text


@pytest.mark.parametrize("mode", MODES)
def test_a_call_nobody_decided_answers_that_it_still_waits_at_the_page(ann, wire_money, mode):
    async def elicit(context, params):
        return types.ElicitResult(action="accept")  # the person went there and did not decide

    with Served(watch_seconds=0.1, approval_wait_seconds=0) as served:

        async def use():
            async with client(served.url("payments"), ann, mode, elicitation_callback=elicit) as mcp:
                return await mcp.call_tool("wire_money", {"amount": 5})

        called = asyncio.run(use())
    row = PendingApproval.objects.get(tool_name="wire_money")
    url = f"http://127.0.0.1:{served.port}/approvals/{row.pk}/"
    assert called.is_error and f"still waits for the person's decision at {url}" in called.content[0].text
    assert row.status == ApprovalStatus.PENDING


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_a_client_without_url_elicitation_is_told_the_pages_url_where_the_person_decides(served, ann, wire_money, mode):
    async def use():
        async with client(served.url("payments"), ann, mode) as mcp:
            return await mcp.call_tool("wire_money", {"amount": 5})

    waiting = asyncio.run(use())
    row = PendingApproval.objects.get(tool_name="wire_money")
    url = f"http://127.0.0.1:{served.port}/approvals/{row.pk}/"
    assert waiting.is_error and f"Open {url}" in waiting.content[0].text

    async def approve():
        async with signed_in(f"http://127.0.0.1:{served.port}", "ann") as http:
            return await decide_on_page(http, url, "approve")

    page = asyncio.run(approve())
    assert 'id="approval-outcome"' in page.text and "echo {&#x27;amount&#x27;: 5}" in page.text
    assert "check the amount" in page.text and "money moves need a person" in page.text


def ask_through_mcp(served, token: str) -> PendingApproval:
    """Call wire_money through the endpoint with a client that cannot elicit: the row that waits."""

    async def use():
        async with client(served.url("payments"), token) as mcp:
            await mcp.call_tool("wire_money", {"amount": 5})

    asyncio.run(use())
    return PendingApproval.objects.get()


def test_the_page_is_not_found_for_another_tenant_nor_for_a_colleague_without_the_permission(served, ann, wire_money):
    member("olga", OTHER_TENANT)
    member("bob", TENANT)
    url = f"/approvals/{ask_through_mcp(served, ann).pk}/"

    async def look():
        seen = {}
        for username in ("olga", "bob"):
            async with signed_in(f"http://127.0.0.1:{served.port}", username) as http:
                seen[username] = (await http.get(url)).status_code
        return seen

    assert asyncio.run(look()) == {"olga": 404, "bob": 404}


def test_a_colleague_with_the_permission_may_decide_and_a_post_without_the_csrf_token_is_refused(
    served, ann, wire_money
):
    member("bob", TENANT)
    get_user_model().objects.get(username="bob").user_permissions.add(
        Permission.objects.get(codename="decide_pendingapproval")
    )
    row = ask_through_mcp(served, ann)
    url = f"/approvals/{row.pk}/"

    async def decide():
        async with signed_in(f"http://127.0.0.1:{served.port}", "bob") as http:
            forged = await http.post(url, data={"decision": "approve", "args_hash": row.args_hash})
            decided = await decide_on_page(http, url, "approve")
        return forged.status_code, decided.status_code

    assert asyncio.run(decide()) == (403, 200)
    assert PendingApproval.objects.get().decided_by == get_user_model().objects.get(username="bob")


def test_the_page_asks_a_stranger_to_sign_in(served, ann, wire_money):
    import httpx2

    url = f"/approvals/{ask_through_mcp(served, ann).pk}/"

    async def look():
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{served.port}") as http:
            return await http.get(url)

    answer = asyncio.run(look())
    assert answer.status_code == 302 and answer.headers["location"].startswith("/login/")


def retried_with_state(served, token: str, state: str):
    """A 2026-07-28 retry of wire_money carrying ``state`` and an ``accept``."""
    answers = {"approval": types.ElicitResult(action="accept")}

    async def use():
        async with client(served.url("payments"), token, "2026-07-28") as mcp:
            return await mcp.call_tool("wire_money", {"amount": 5}, input_responses=answers, request_state=state)

    return asyncio.run(use())


def test_a_retry_with_a_request_state_this_server_did_not_sign_is_refused(served, ann, wire_money):
    refused = retried_with_state(served, ann, "approval-I-made-up")
    assert refused.is_error and "requestState is not one this server issued" in refused.content[0].text
    assert not PendingApproval.objects.exists()  # and nothing ran or waits


def test_a_retry_naming_another_persons_approval_reads_nothing_of_it(served, ann, wire_money):
    from django.core import signing

    from mcpserver.approval_flow import STATE_SALT

    row = ask_through_mcp(served, ann)
    bob = member("bob", TENANT)
    refused = retried_with_state(served, bob, signing.dumps(str(row.pk), salt=STATE_SALT))
    assert refused.is_error and "names no approval of yours" in refused.content[0].text


def test_edited_arguments_that_are_not_json_are_refused_naming_the_field_and_nothing_runs(served, ann, wire_money):
    url = f"/approvals/{ask_through_mcp(served, ann).pk}/"

    async def edit():
        async with signed_in(f"http://127.0.0.1:{served.port}", "ann") as http:
            return await decide_on_page(http, url, "edit", arguments="{amount: 3")

    page = asyncio.run(edit())
    assert page.status_code == 400 and "arguments: not valid JSON" in page.text
    assert PendingApproval.objects.get().status == ApprovalStatus.PENDING


def test_edited_arguments_nested_past_the_depth_limit_are_refused_naming_the_limit_and_nothing_runs(
    served, ann, wire_money, settings
):
    url = f"/approvals/{ask_through_mcp(served, ann).pk}/"
    deep = "[" * (settings.JSON_MAX_DEPTH + 5) + "]" * (settings.JSON_MAX_DEPTH + 5)

    async def edit():
        async with signed_in(f"http://127.0.0.1:{served.port}", "ann") as http:
            return await decide_on_page(http, url, "edit", arguments=deep)

    page = asyncio.run(edit())
    assert page.status_code == 400 and "arguments" in page.text and "deep" in page.text
    assert PendingApproval.objects.get().status == ApprovalStatus.PENDING
