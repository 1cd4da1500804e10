"""The MCP conformance suite's client side, performed with Eunice's own connection code.

``manage.py mcp_conformance_client URL`` is the entry point the official suite
(``@modelcontextprotocol/conformance client --command …``) runs once per scenario:
it connects to the scenario's server as Eunice connects to any Streamable HTTP
server (``registry.mcp.connection.Connection``: the revision negotiated, the
change subscription, results mapped to the contract), lists the tools and calls
each one the way a model would, with arguments built from its input schema. The
person a real call would ask (elicitation) is played by a stand-in that accepts
with the form's defaults, as the suite's reference clients do.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from typing import Any

from eunice.jsonlimits import loads_bounded
from registry.contract import Ok
from registry.mcp import MCPError
from registry.mcp.config import ServerConfig
from registry.mcp.connection import Connection
from registry.mcp.results import to_envelope
from registry.mcp.urls import check_url

# The suite's authorization servers expect this client id where they accept Client ID
# Metadata Documents (they fetch nothing from it).
SUITE_CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
SCENARIO_VARIABLE = "MCP_CONFORMANCE_SCENARIO"
CONTEXT_VARIABLE = "MCP_CONFORMANCE_CONTEXT"
REVISION_VARIABLE = "MCP_CONFORMANCE_PROTOCOL_VERSION"
TIMEOUT = 20.0

# Where a scenario checks what a model would choose to send (values that need encoding in a
# header), the arguments are the scenario's own: nothing in a schema says to send them.
SCENARIO_ARGUMENTS: dict[str, dict[str, dict[str, Any]]] = {
    "http-custom-headers": {
        "test_custom_headers": {
            "region": "us-west1",
            "priority": 5,
            "verbose": True,
            "query": "status",
            "non_ascii_val": "Zürich",
            "whitespace_val": "  padded  ",
            "leading_space_val": " lead",
            "trailing_space_val": "trail ",
            "internal_space_val": "a b c",
            "control_char_val": "bell\u0007",
            "crlf_val": "line1\r\nline2",
            "tab_val": "\ttabbed",
        },
        "test_custom_headers_null": {"region": "us-west1", "priority": 1, "query": "status"},
    },
}


@dataclass
class Outcome:
    """What the run did, for the command to print: one line per step."""

    scenario: str
    lines: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        self.lines.append(line)


def scenario_from_environment() -> tuple[str, dict]:
    raw = os.environ.get(CONTEXT_VARIABLE) or "{}"
    try:
        context = loads_bounded(raw, what=CONTEXT_VARIABLE)
    except ValueError:
        context = {}
    return os.environ.get(SCENARIO_VARIABLE, ""), context if isinstance(context, dict) else {}


async def run(url: str, scenario: str, context: dict) -> Outcome:
    """Connect to ``url``, list the tools, call each; raises MCPError when the connection fails."""
    outcome = Outcome(scenario)
    config = ServerConfig(
        id=0,
        name="conformance",
        tenant_id="",
        transport="streamable_http",
        url=url,
        allow_private=True,
        call_timeout=TIMEOUT,
        **_oauth(url, context),
    )

    async def tools_changed(_tools: list) -> None:
        outcome.say("the server announced a changed tool list")

    connection = Connection(
        config,
        check_url(url, allow_private=True),
        on_tools_changed=tools_changed,
        on_lost=lambda reason: outcome.say(f"connection lost: {reason}"),
        elicitation=_accept_with_defaults,
        sampling_by_person=False,  # no person and no model here: declare no sampling
        # The suite says which revision a scenario runs at; at 2026-07-28, discover first.
        modern_first=os.environ.get(REVISION_VARIABLE, "") >= "2026",
    )
    tools = await connection.open(TIMEOUT)
    try:
        outcome.say(f"connected; {len(tools)} tool(s): {', '.join(tool.name for tool in tools)}")
        for tool in tools:
            arguments = SCENARIO_ARGUMENTS.get(scenario, {}).get(tool.name) or arguments_for(
                tool.definition.get("inputSchema") or {}
            )
            outcome.say(f"called {tool.name} {json.dumps(arguments)}: {await _call(connection, tool.name, arguments)}")
    finally:
        await connection.close()
    return outcome


def _oauth(url: str, context: dict) -> dict:
    """The OAuth part of the run's server: Eunice's provider, keeping grants in memory, following
    the authorization server's redirect without a browser, with the credentials the scenario
    pre-registered (``client_id``, ``client_secret`` in its context) if any. A server that
    asks for no authorization never calls on it."""
    from registry.mcp.http import pinned_client
    from registry.mcp.oauth import FollowRedirect, MemoryStore

    preregistered = {key: str(context[key]) for key in ("client_id", "client_secret", "issuer") if context.get(key)}
    flow = FollowRedirect(
        lambda: pinned_client(check_url(url, allow_private=True), None, elsewhere=True, allow_private=True),
        client_metadata_url=SUITE_CLIENT_METADATA_URL,
    )
    return {"authorization": "tenant", "oauth_store": MemoryStore(preregistered), "oauth_flow": flow}


async def _call(connection: Connection, tool: str, arguments: dict) -> str:
    """What the model would read of the call: the envelope's text, or the failure in words
    (a failed call is the server's answer, not the end of the run)."""
    from mcp.shared.exceptions import MCPError as SDKError

    try:
        result = await asyncio.wait_for(connection.call(tool, arguments, TIMEOUT), TIMEOUT)
    except (SDKError, MCPError, TimeoutError) as exc:
        return f"failed: {exc}"
    envelope = to_envelope(connection.config.name, tool, result)
    return str(envelope.data if isinstance(envelope, Ok) else envelope.message)[:300]


def arguments_for(schema: dict) -> dict:
    """Arguments a model might send: each property's default, else its first enum value,
    else a plain value of its type; required properties always, optional ones when they
    have a default."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    arguments: dict[str, Any] = {}
    for name, spec in properties.items():
        if not isinstance(spec, dict):
            continue
        if "default" in spec:
            arguments[name] = spec["default"]
        elif name in required:
            arguments[name] = _sample(spec)
    return arguments


def _sample(spec: dict) -> Any:
    if spec.get("enum"):
        return spec["enum"][0]
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    samples: dict[str, Any] = {"integer": 2, "number": 3, "boolean": True, "array": [], "object": {}, "null": None}
    return samples.get(str(kind), "eunice")


async def _accept_with_defaults(_context: Any, params: Any) -> Any:
    import mcp_types

    schema = getattr(params, "requested_schema", None) or {}
    content = {
        name: spec["default"]
        for name, spec in (schema.get("properties") or {}).items()
        if isinstance(spec, dict) and "default" in spec
    }
    return mcp_types.ElicitResult(action="accept", content=content)
