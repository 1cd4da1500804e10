"""An MCP tools/call carries the execute_tool span's W3C trace context in its ``_meta``."""

import json

import pytest

from registry.mcp.config import ServerConfig
from tests.conftest import text
from tests.mcp.conftest import add_server, mcp

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def patient_connect(monkeypatch):
    """A loaded machine starts a Python server slowly; this is not a test of that."""
    from registry.mcp import manager as manager_module

    monkeypatch.setattr(manager_module, "CONNECT_TIMEOUT", 60.0)


def test_the_server_is_told_the_calls_traceparent(otel, manager, call):
    manager.connect(ServerConfig.from_model(add_server()))
    heard = json.loads(text(call(mcp("trace_context"))))

    span = otel.span(f"execute_tool {mcp('trace_context')}")
    version, trace_id, parent_id, flags = heard["traceparent"].split("-")
    assert trace_id == f"{span.context.trace_id:032x}"
    assert parent_id == f"{span.context.span_id:016x}"
    assert span.attributes["gen_ai.tool.type"] == "extension"
    assert span.attributes["eunice.tool.kind"] == "mcp"


def test_with_telemetry_off_no_trace_context_is_sent(manager, call):
    manager.connect(ServerConfig.from_model(add_server()))
    assert json.loads(text(call(mcp("trace_context")))) == {}
