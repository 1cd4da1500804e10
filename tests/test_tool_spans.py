"""Every tool call is one ``execute_tool {name}`` span on the GenAI conventions, whatever path it took."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.trace import StatusCode

from eunice import telemetry
from registry.context import ToolContext
from registry.contract import Err
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db

ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


def add(inputs: dict, context: ToolContext) -> str:
    return str(inputs["a"] + inputs["b"])


def broken(inputs: dict, context: ToolContext) -> str:
    raise RuntimeError("the disk is on fire")


def test_a_call_that_succeeds_is_one_span_with_the_conventions_attributes(otel, make_tool, call):
    make_tool("t_add", add, input_schema=ADD)
    call("t_add", context={"tool_use_id": "toolu_1", "conversation_id": "42"}, a=2, b=3)

    span = otel.span("execute_tool t_add")
    assert span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert span.attributes["gen_ai.tool.name"] == "t_add"
    assert span.attributes["gen_ai.tool.call.id"] == "toolu_1"
    assert span.attributes["gen_ai.tool.type"] == "function"
    assert span.attributes["gen_ai.conversation.id"] == "42"
    assert span.attributes["eunice.envelope"] == "ok"
    assert span.attributes["eunice.tool.kind"] == "system"
    assert span.attributes["eunice.tenant.id"] == TENANT
    assert "error.type" not in span.attributes and span.status.status_code is StatusCode.UNSET
    assert "gen_ai.agent.name" not in span.attributes, "only a delegated task's calls name an agent"
    assert "gen_ai.tool.call.arguments" not in span.attributes, "content capture is off by default"
    assert "gen_ai.tool.call.result" not in span.attributes


def test_a_hint_is_not_an_error(otel, make_tool, call):
    make_tool("t_add", add, input_schema=ADD)
    call("t_add", a="two", b=3)

    span = otel.span("execute_tool t_add")
    assert span.attributes["eunice.envelope"] == "hint"
    assert span.attributes["eunice.hint.kind"] == "schema"
    assert "error.type" not in span.attributes and span.status.status_code is StatusCode.UNSET


def test_a_call_that_ends_before_its_handler_still_has_its_span(otel, make_tool, call):
    make_tool("t_unregistered")  # a row, and no handler: answered with a Hint, never run
    call("t_unregistered")
    span = otel.span("execute_tool t_unregistered")
    assert span.attributes["eunice.envelope"] == "hint"
    assert span.attributes["gen_ai.tool.type"] == "function"


def test_an_err_sets_error_type_to_its_kind_and_the_status_to_error(otel, make_tool, call):
    make_tool("t_broken", broken)
    result = call("t_broken")

    span = otel.span("execute_tool t_broken")
    assert span.attributes["eunice.envelope"] == "err"
    assert span.attributes["error.type"] == "RuntimeError"
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == result.error


class Refusing:
    def check(self, name: str, inputs: dict, context: ToolContext) -> Err | None:
        return Err(f"{name} is not allowed here", "PolicyRule")


def test_a_call_the_gate_refuses_is_traced_like_one_that_ran(otel, make_tool, call):
    make_tool("t_add", add, input_schema=ADD)
    call("t_add", context={"gate": Refusing()}, a=1, b=2)

    span = otel.span("execute_tool t_add")
    assert span.attributes["error.type"] == "PolicyRule"
    assert span.attributes["gen_ai.tool.type"] == "function"


def test_a_refused_call_has_its_span(otel, make_tool, registry):
    make_tool("t_add", add, input_schema=ADD)
    registry.refuse("t_add", {"a": 1, "b": 2}, ToolContext(tenant_id=TENANT), Err("cancelled", "Cancelled"))
    assert otel.span("execute_tool t_add").attributes["error.type"] == "Cancelled"


def test_a_delegated_tasks_call_names_the_agent(otel, make_tool, call):
    make_tool("t_add", add, input_schema=ADD)
    call("t_add", context={"depth": 1, "mode": "delegate"}, a=1, b=2)
    span = otel.span("execute_tool t_add")
    assert span.attributes["gen_ai.agent.name"] == "eunice.delegate"
    assert span.attributes["eunice.delegate.depth"] == 1


def test_the_surface_reason_travels_with_the_call(otel, make_tool, call):
    make_tool("t_add", add, input_schema=ADD)
    call("t_add", context={"surface_reason": "working_set"}, a=1, b=2)
    assert otel.span("execute_tool t_add").attributes["eunice.surface.reason"] == "working_set"


def test_content_capture_puts_the_redacted_arguments_and_the_logged_summary_on_the_span(
    otel, make_tool, call, monkeypatch
):
    monkeypatch.setattr(telemetry.state, "capture_content", True)
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "integer"},
            "token": {"type": "string", "writeOnly": True},
        },
        "required": ["a", "b"],
    }
    make_tool("t_add", add, input_schema=schema)
    call("t_add", a=2, b=3, token="hunter2")

    span = otel.span("execute_tool t_add")
    assert span.attributes["gen_ai.tool.call.arguments"] == '{"a": 2, "b": 3, "token": "[redacted]"}'
    assert span.attributes["gen_ai.tool.call.result"].endswith("5")
    assert "hunter2" not in str(dict(span.attributes))


@pytest.mark.parametrize(
    "raw, expected",
    [("true", True), ("0", False), ("SPAN_ONLY", True), ("span_and_event", True), ("NO_CONTENT", False), ("", False)],
)
def test_the_content_capture_switch_reads_booleans_and_the_util_genai_mode_names(monkeypatch, raw, expected):
    monkeypatch.setenv(telemetry.CAPTURE, raw)
    assert telemetry.capture_content() is expected


def test_a_bad_content_capture_value_names_the_variable_and_the_values(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv(telemetry.CAPTURE, "everything")
    with pytest.raises(ImproperlyConfigured, match="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT='everything'"):
        telemetry.capture_content()


def test_the_duration_metric_is_recorded_per_tool_with_its_error_type(otel, make_tool, call):
    make_tool("t_add", add, input_schema=ADD)
    make_tool("t_broken", broken)
    call("t_add", a=1, b=2)
    call("t_add", a=1, b=2)
    call("t_broken")

    points = {p.attributes["gen_ai.tool.name"]: p for p in otel.points("gen_ai.execute_tool.duration")}
    assert points["t_add"].count == 2 and "error.type" not in points["t_add"].attributes
    assert points["t_broken"].count == 1 and points["t_broken"].attributes["error.type"] == "RuntimeError"
    assert points["t_add"].attributes["gen_ai.tool.type"] == "function"


def outer_calling_inner(inputs: dict, context: ToolContext) -> str:
    assert context.registry is not None
    inner = ToolContext(tenant_id=context.tenant_id)
    return context.registry.execute_tool("t_add", {"a": 1, "b": 1}, inner).content


# Transactional: the worker thread's own connection must see the rows (and not wait on the test's lock).
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("inline", [True, False], ids=["inline", "on a worker thread"])
def test_a_call_made_by_a_handler_is_a_child_of_its_span(otel, make_tool, call, inline):
    make_tool("t_add", add, input_schema=ADD)
    make_tool("t_outer", outer_calling_inner, inline=inline)
    call("t_outer")

    outer, inner = otel.span("execute_tool t_outer"), otel.span("execute_tool t_add")
    assert inner.parent is not None and inner.parent.span_id == outer.context.span_id
    assert inner.context.trace_id == outer.context.trace_id


@pytest.mark.django_db(transaction=True)
def test_an_async_call_and_its_async_handler_run_under_its_span(otel, make_tool, registry):
    seen: list = []

    async def async_handler(inputs: dict, context: ToolContext) -> str:
        from opentelemetry import trace

        seen.append(trace.get_current_span().get_span_context())
        return "done"

    make_tool("t_async", async_handler)
    asyncio.run(registry.aexecute_tool("t_async", {}, ToolContext(tenant_id=TENANT)))

    span = otel.span("execute_tool t_async")
    assert seen == [span.context]
    assert span.attributes["eunice.envelope"] == "ok"
