"""tools/list pages, and a client hears list_changed when an approval or a bundle edit changes its list."""

import asyncio

import pytest

from registry.models import ToolDefinition, ToolStatus
from tests import handlers
from tests.mcpserver.conftest import Served, bundle, client

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_tools_list_pages_through_a_bundle_in_name_order(ann, make_tool, mode):
    for name in ("tool_c", "tool_a", "tool_e", "tool_b", "tool_d"):
        make_tool(name, handlers.echo)
    bundle("five", "tool_a", "tool_b", "tool_c", "tool_d", "tool_e")

    async def pages(url):
        async with client(url, ann, mode) as mcp:
            seen, cursor = [], None
            while True:
                page = await mcp.list_tools(cursor=cursor)
                seen.append([tool.name for tool in page.tools])
                cursor = page.next_cursor
                if cursor is None:
                    return seen

    with Served(page_size=2) as served:
        assert asyncio.run(pages(served.url("five"))) == [["tool_a", "tool_b"], ["tool_c", "tool_d"], ["tool_e"]]


def test_an_invalid_cursor_is_refused_with_invalid_params(served, ann, make_tool):
    from mcp.shared.exceptions import MCPError

    async def use():
        async with client(served.url(), ann) as mcp:
            with pytest.raises(MCPError) as refused:
                await mcp.list_tools(cursor="not-a-cursor")
            return refused.value

    assert "invalid cursor" in asyncio.run(use()).message


def test_a_session_hears_list_changed_when_an_approval_is_withdrawn(served, ann, make_tool):
    make_tool("echo_words", handlers.echo)
    make_tool("summarise", handlers.echo)
    bundle("writing", "echo_words", "summarise")
    heard = asyncio.Event()

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            heard.set()

    async def use():
        async with client(served.url("writing"), ann, message_handler=on_message) as mcp:
            before = [tool.name for tool in (await mcp.list_tools()).tools]
            await asyncio.to_thread(_withdraw, "summarise")
            await asyncio.wait_for(heard.wait(), 20)
            after = [tool.name for tool in (await mcp.list_tools()).tools]
            return before, after

    before, after = asyncio.run(use())
    assert before == ["echo_words", "summarise"] and after == ["echo_words"]


def test_a_listen_stream_hears_tools_list_changed_when_staff_add_a_tool_to_the_bundle(served, ann, make_tool):
    make_tool("echo_words", handlers.echo)
    make_tool("summarise", handlers.echo)
    writing = bundle("writing", "echo_words")

    async def use():
        async with client(served.url("writing"), ann, "2026-07-28") as mcp:
            async with mcp.listen(tools_list_changed=True) as subscription:
                await asyncio.to_thread(_add, writing, "summarise")
                event = await asyncio.wait_for(anext(aiter(subscription)), 20)
            return type(event).__name__, [tool.name for tool in (await mcp.list_tools()).tools]

    kind, after = asyncio.run(use())
    assert kind == "ToolsListChanged" and after == ["echo_words", "summarise"]


def _withdraw(name: str) -> None:
    tool = ToolDefinition.objects.get(name=name)
    tool.status = ToolStatus.REJECTED
    tool.save()


def _add(writing, name: str) -> None:
    writing.tools = [*writing.tools, name]
    writing.save()
