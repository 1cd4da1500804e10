"""Outside MCP clients (the real SDK, over HTTP) use a bundle's approved tools through the one path."""

import asyncio

import pytest

from registry.execlog import writer
from registry.models import ToolExecutionLog, ToolStatus
from tests import handlers
from tests.conftest import OTHER_TENANT
from tests.mcpserver.conftest import MODES, bundle, client

pytestmark = pytest.mark.django_db(transaction=True)


def names(listed) -> list[str]:
    return [tool.name for tool in listed.tools]


@pytest.mark.parametrize("mode", MODES)
def test_a_machine_lists_and_calls_the_bundles_tools_and_the_call_is_logged_as_its_user(served, ann, make_tool, mode):
    make_tool("echo_words", handlers.echo, input_schema={"type": "object", "properties": {"word": {"type": "string"}}})
    make_tool("not_in_the_bundle", handlers.echo)
    bundle("writing", "echo_words")

    async def use():
        async with client(served.url("writing"), ann, mode) as mcp:
            listed = await mcp.list_tools()
            called = await mcp.call_tool("echo_words", {"word": "hello"})
            return listed, called

    listed, called = asyncio.run(use())
    assert names(listed) == ["echo_words"]
    assert listed.tools[0].input_schema["properties"] == {"word": {"type": "string"}}
    assert not called.is_error and "echo {'word': 'hello'}" in called.content[0].text
    writer().flush()
    row = ToolExecutionLog.objects.get(tool_name="echo_words")
    assert (row.tenant_id, row.user_id, row.success) == ("acme", str(_user_id("ann")), True)


def _user_id(username: str) -> int:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username).pk


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_outside_the_bundle_is_not_called_and_the_closest_served_tool_is_named(served, ann, make_tool, mode):
    make_tool("echo_words", handlers.echo)
    make_tool("delete_everything", handlers.echo)
    bundle("writing", "echo_words")

    async def use():
        async with client(served.url("writing"), ann, mode) as mcp:
            return await mcp.call_tool("delete_everything", {}), await mcp.call_tool("echo_word", {})

    outside, misspelt = asyncio.run(use())
    assert outside.is_error and "does not serve it" in outside.content[0].text
    assert misspelt.is_error and "did you mean echo_words?" in misspelt.content[0].text
    writer().flush()
    assert not ToolExecutionLog.objects.exists()


def test_every_tool_the_tenant_may_use_is_served_at_mcp_and_no_other_tenants(served, ann, make_tool):
    make_tool("acme_report", handlers.echo, tenant_id="acme")
    make_tool("globex_report", handlers.echo, tenant_id=OTHER_TENANT)
    make_tool("draft_report", handlers.echo, status=ToolStatus.DRAFT)

    async def use():
        async with client(served.url(), ann) as mcp:
            listed = []
            page = await mcp.list_tools()
            listed += names(page)
            while page.next_cursor:
                page = await mcp.list_tools(cursor=page.next_cursor)
                listed += names(page)
            return listed

    listed = asyncio.run(use())
    assert "acme_report" in listed
    assert "globex_report" not in listed and "draft_report" not in listed


@pytest.mark.parametrize("mode", MODES)
def test_the_tenants_policy_rules_refuse_a_call_from_outside(served, ann, make_tool, mode):
    from conversations.models import PolicyRule

    make_tool("export_all", handlers.echo)
    bundle("exports", "export_all")
    PolicyRule.objects.create(
        name="staff only",
        tenant_id="acme",
        tool_name="export_all",
        kind=PolicyRule.Kind.REQUIRES_CAPABILITY,
        parameter="export",
        action=PolicyRule.Action.BLOCK,
    )

    async def use():
        async with client(served.url("exports"), ann, mode) as mcp:
            return await mcp.call_tool("export_all", {})

    refused = asyncio.run(use())
    assert refused.is_error and "export" in refused.content[0].text
    writer().flush()
    assert ToolExecutionLog.objects.get(tool_name="export_all").success is False


def test_a_tool_that_needs_a_persons_approval_does_not_run_and_says_where_it_waits(served, ann, make_tool):
    from registry.models import ApprovalRule, PendingApproval

    make_tool("wire_money", handlers.echo)
    bundle("payments", "wire_money")
    ApprovalRule.objects.create(name="money moves need a person", tenant_id="acme", tool_name="wire_money")

    async def use():
        async with client(served.url("payments"), ann, "2026-07-28") as mcp:
            return await mcp.call_tool("wire_money", {})

    waiting = asyncio.run(use())
    assert waiting.is_error and "waits for the person's approval" in waiting.content[0].text
    assert PendingApproval.objects.get(tool_name="wire_money").tenant_id == "acme"


def test_another_tenants_tool_is_not_run_through_the_all_tools_endpoint(served, ann, make_tool):
    make_tool("globex_payroll", handlers.echo, tenant_id=OTHER_TENANT)

    async def use():
        async with client(served.url(), ann) as mcp:
            return await mcp.call_tool("globex_payroll", {})

    answer = asyncio.run(use())
    assert "unknown tool 'globex_payroll'" in answer.content[0].text and "echo" not in answer.content[0].text
    writer().flush()
    assert ToolExecutionLog.objects.get(tool_name="globex_payroll").outcome == "hint"  # answered, never run


ROUTED = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}


def _call_with_header(served, token: str, name: str, header: str):
    """A stateless tools/call of ``name`` with no arguments and an ``Mcp-Param-Region`` header."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    async def use():
        headers = {"Authorization": f"Bearer {token}", "Mcp-Param-Region": header}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with Client(streamable_http_client(served.url(), http_client=http), mode="2026-07-28") as mcp:
                await mcp.list_tools()  # as a client does, to learn which headers a tool takes
                try:
                    return await mcp.call_tool(name, {})
                except MCPError as exc:
                    return exc

    return asyncio.run(use())


def test_a_stateless_calls_mcp_param_header_is_checked_against_the_tools_schema(served, ann, make_tool):
    make_tool("route_parcel", handlers.echo, input_schema=ROUTED)

    refused = _call_with_header(served, ann, "route_parcel", "eu")
    assert "Mcp-Param-Region" in str(refused) and not hasattr(refused, "content")
    writer().flush()
    assert not ToolExecutionLog.objects.exists()


def test_another_tenants_tool_schema_is_not_used_to_check_the_headers(served, ann, make_tool):
    make_tool("globex_route", handlers.echo, input_schema=ROUTED, tenant_id=OTHER_TENANT)

    answered = _call_with_header(served, ann, "globex_route", "eu")
    assert "unknown tool 'globex_route'" in answered.content[0].text  # answered as for no such tool
