"""At 2025-11-25 a call is answered with one JSON body when nothing but its result belongs
to it, and with an SSE stream when anything else (progress here; an approval's
elicitation in test_approval_through_elicitation.py) comes first (mcpserver/json_first.py)."""

import asyncio
import json
import time

import pytest

from mcpserver import json_first
from tests.mcpserver.conftest import bundle, client

pytestmark = pytest.mark.django_db(transaction=True)

JSON, SSE = "application/json", "text/event-stream"


def echo(inputs, context):
    return {"message": f"echo {inputs['word']}"}


def counts_to_three(inputs, context):
    for step in (1, 2, 3):
        context.progress(f"step {step}", step / 3)
    return {"message": "counted to three"}


def slow(inputs, context):
    time.sleep(0.3)
    return {"message": "took its time"}


def said(result) -> str:
    """The tool's own words: the last line of the result's text."""
    return result.content[0].text.splitlines()[-1]


class Exchanges:
    """The content type of every response to a POSTed JSON-RPC request, by its method."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.hooks = {"response": [self.record]}

    async def record(self, response) -> None:
        sent = json.loads(response.request.content or b"{}") if response.request.method == "POST" else {}
        if "id" in sent and "method" in sent:
            self.seen.append((sent["method"], response.headers.get("content-type", "").split(";")[0]))

    def of(self, method: str) -> list[str]:
        return [kind for sent, kind in self.seen if sent == method]


@pytest.fixture
def tools(make_tool):
    schema = {"type": "object", "properties": {"word": {"type": "string"}}}
    make_tool("echo_word", echo, input_schema=schema)
    make_tool("counts_to_three", counts_to_three, inline=False)
    make_tool("slow", slow, inline=False)
    bundle("jobs", "echo_word", "counts_to_three", "slow")


def test_a_call_that_sends_nothing_but_its_result_comes_back_as_one_json_body(served, ann, tools):
    exchanges = Exchanges()

    async def use():
        async with client(served.url("jobs"), ann, event_hooks=exchanges.hooks) as mcp:
            return [await mcp.call_tool("echo_word", {"word": word}) for word in ("one", "two")]

    called = asyncio.run(use())
    assert [said(result) for result in called] == ["echo one", "echo two"]
    assert exchanges.of("tools/call") == [JSON, JSON]
    assert exchanges.of("tools/list") == [JSON]  # the client lists to learn the output schemas


def test_a_call_with_a_progress_token_streams_its_progress_in_order_before_its_result(served, ann, tools):
    exchanges = Exchanges()
    heard: list[object] = []

    async def progress(value, total, message):
        heard.append((value, total, message))

    async def use():
        async with client(served.url("jobs"), ann, event_hooks=exchanges.hooks) as mcp:
            result = await mcp.call_tool("counts_to_three", {}, progress_callback=progress)
            heard.append(said(result))

    asyncio.run(use())
    assert heard == [
        (33.333, 100, "step 1"),
        (66.667, 100, "step 2"),
        (100.0, 100, "step 3"),
        "counted to three",
    ]
    assert exchanges.of("tools/call") == [SSE]


def test_a_call_silent_for_longer_than_the_wait_is_streamed_so_its_connection_is_kept_alive(
    served, ann, tools, monkeypatch
):
    monkeypatch.setattr(json_first, "SSE_AFTER_SECONDS", 0.05)
    exchanges = Exchanges()

    async def use():
        async with client(served.url("jobs"), ann, event_hooks=exchanges.hooks) as mcp:
            return await mcp.call_tool("slow", {}), await mcp.call_tool("echo_word", {"word": "quick"})

    slow_one, quick_one = asyncio.run(use())
    assert (said(slow_one), said(quick_one)) == ("took its time", "echo quick")
    assert exchanges.of("tools/call") == [SSE, JSON]
