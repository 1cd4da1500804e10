"""A call is answered with one JSON body when nothing but its result belongs to it, and
with an SSE stream when anything else comes first (its progress here; an approval's
elicitation in test_approval_through_elicitation.py) or when it runs past the wait; a
session that ends under a call answers it at once. At 2026-07-28 the SDK does this; at
2025-11-25 mcpserver/json_first.py."""

import asyncio
import json
import threading

import pytest

from mcpserver import json_first
from tests.mcpserver.conftest import MODES, bundle, client

pytestmark = pytest.mark.django_db(transaction=True)

JSON, SSE = "application/json", "text/event-stream"


def echo(inputs, context):
    return {"message": f"echo {inputs['word']}"}


def counts_to_three(inputs, context):
    for step in (1, 2, 3):
        context.progress(f"step {step}", step / 3)
    return {"message": "counted to three"}


RUNNING, RELEASED = threading.Event(), threading.Event()


def runs_until_released(inputs, context):
    RUNNING.set()
    RELEASED.wait(10)
    return {"message": "released"}


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
    make_tool("runs_until_released", runs_until_released, inline=False)
    bundle("jobs", "echo_word", "counts_to_three", "runs_until_released")
    RUNNING.clear()
    RELEASED.clear()
    yield
    RELEASED.set()


@pytest.mark.parametrize("mode", MODES)  # at 2026-07-28 the SDK does it: both alike
def test_a_call_that_sends_nothing_but_its_result_comes_back_as_one_json_body(served, ann, tools, mode):
    exchanges = Exchanges()

    async def use():
        async with client(served.url("jobs"), ann, mode, event_hooks=exchanges.hooks) as mcp:
            return [await mcp.call_tool("echo_word", {"word": word}) for word in ("one", "two")]

    called = asyncio.run(use())
    assert [said(result) for result in called] == ["echo one", "echo two"]
    assert exchanges.of("tools/call") == [JSON, JSON]
    assert exchanges.of("tools/list") == [JSON]  # the client lists to learn the output schemas


@pytest.mark.parametrize("mode", MODES)
def test_a_call_with_a_progress_token_streams_its_progress_in_order_before_its_result(served, ann, tools, mode):
    exchanges = Exchanges()
    heard: list[object] = []

    async def progress(value, total, message):
        heard.append((value, total, message))

    async def use():
        async with client(served.url("jobs"), ann, mode, event_hooks=exchanges.hooks) as mcp:
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

    async def release_once_streamed(response) -> None:
        if exchanges.of("tools/call") == [SSE]:  # the tool runs until its stream has begun
            RELEASED.set()

    exchanges.hooks["response"].append(release_once_streamed)

    async def use():
        async with client(served.url("jobs"), ann, event_hooks=exchanges.hooks) as mcp:
            return await mcp.call_tool("runs_until_released", {}), await mcp.call_tool("echo_word", {"word": "quick"})

    silent, quick = asyncio.run(use())
    assert (said(silent), said(quick)) == ("released", "echo quick")
    assert exchanges.of("tools/call") == [SSE, JSON]


def test_a_call_whose_session_ends_while_it_runs_is_answered_with_an_error_at_once(served, ann, tools):
    import httpx2

    headers = {"Authorization": f"Bearer {ann}", "Accept": f"{JSON}, {SSE}", "MCP-Protocol-Version": "2025-11-25"}

    async def rpc(http, method: str, params: dict, **more) -> object:
        body = {"jsonrpc": "2.0", "method": method, "params": params, **more}
        return await http.post(served.url("jobs"), json=body, headers=headers)

    async def use():
        async with httpx2.AsyncClient(timeout=30) as http:
            hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
            opened = await rpc(http, "initialize", hello, id=1)
            headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
            await rpc(http, "notifications/initialized", {})
            call = asyncio.ensure_future(
                rpc(http, "tools/call", {"name": "runs_until_released", "arguments": {}}, id=2)
            )
            assert await asyncio.to_thread(RUNNING.wait, 10)
            ended = await http.delete(served.url("jobs"), headers=headers)
            try:
                return ended.status_code, await call
            finally:
                RELEASED.set()

    ended, answered = asyncio.run(use())
    assert ended == 200
    # Not the tool's result (it was still running): the session's end, in one JSON body.
    assert (answered.status_code, answered.headers["content-type"]) == (500, JSON)
    assert answered.json()["error"]["message"] == "Session terminated before the request completed"
