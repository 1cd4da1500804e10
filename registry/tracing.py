"""One ``execute_tool {gen_ai.tool.name}`` span per tool call, on the GenAI conventions.

The registry starts the span when it prepares a call (``start``), makes it the current
span wherever the handler runs (``current``, ``on_worker``: a nested call, a sandboxed
program's ``call_tool`` and an MCP request's ``_meta.traceparent`` all descend from it)
and ends it with the envelope (``finish``), which also records the
``gen_ai.execute_tool.duration`` metric. The registry calls here only while
``eunice.telemetry.state.on``; this module imports the OpenTelemetry API, never on the
path of a call made with telemetry off.

Attributes: the conventions' ``gen_ai.operation.name``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``gen_ai.tool.type``, ``gen_ai.conversation.id``,
``gen_ai.agent.name`` (a delegated task's calls) and ``error.type`` (an Err's kind; a
Hint is a correction, not an error); Eunice's own under ``eunice.*``: ``envelope``,
``hint.kind``, ``tool.kind``, ``surface.reason``, ``tenant.id``, ``delegate.depth``. The
arguments and the result only with content capture on, redacted and cut as the
execution log keeps them.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, use_span

from eunice.telemetry import state
from registry.execlog import summarize
from registry.models import ToolType
from registry.snapshot import redacted

if TYPE_CHECKING:
    from registry.registry import Call
    from registry.result import ToolResult

# gen_ai.tool.type: a system or custom tool runs in Eunice ("function"); an MCP tool is
# an agent-side call to another service ("extension").
TOOL_TYPES: dict[str, str] = {ToolType.SYSTEM: "function", ToolType.CUSTOM: "function", ToolType.MCP: "extension"}
DELEGATE = "eunice.delegate"  # gen_ai.agent.name of a delegated task
ARGUMENTS_CHARS = 4096  # the captured arguments, cut like the log's output summary


def start(call: Call) -> Span:
    """The call's span, started now under the caller's current span."""
    context = call.context
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "eunice.tenant.id": context.tenant_id,
    }
    if context.tool_use_id:
        attributes["gen_ai.tool.call.id"] = context.tool_use_id
    if context.conversation_id:
        attributes["gen_ai.conversation.id"] = str(context.conversation_id)
    if context.depth:
        attributes["gen_ai.agent.name"] = DELEGATE
        attributes["eunice.delegate.depth"] = context.depth
    if context.surface_reason:
        attributes["eunice.surface.reason"] = context.surface_reason
    assert state.tracer is not None
    return state.tracer.start_span(f"execute_tool {call.name}", kind=SpanKind.INTERNAL, attributes=attributes)


@contextmanager
def current(span: Span) -> Iterator[None]:
    """``span`` as the current span while the handler runs on this thread or task."""
    with use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
        yield


def on_worker(span: Span, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` made to run under ``span`` on a tool worker (threads do not inherit context)."""
    return functools.partial(_under, span, func)


def _under(span: Span, func: Callable[..., Any], *args: Any) -> Any:
    with current(span):
        return func(*args)


def finish(call: Call, result: ToolResult, outcome: str, kind: str | None) -> None:
    """End the call's span with its envelope, and record its duration."""
    span = call.span
    assert span is not None
    definition = call.definition
    attributes: dict[str, Any] = {"eunice.envelope": outcome}
    tool_type = None
    if definition is not None:
        tool_type = TOOL_TYPES.get(definition.tool_type)
        attributes["eunice.tool.kind"] = definition.tool_type
        if tool_type is not None:
            attributes["gen_ai.tool.type"] = tool_type
    if outcome == "hint" and kind:
        attributes["eunice.hint.kind"] = kind
    error_type = (kind or "_OTHER") if outcome == "err" else None
    if error_type is not None:
        attributes["error.type"] = error_type
        span.set_status(Status(StatusCode.ERROR, (result.error or "")[:500]))
    if state.capture_content:
        arguments = json.dumps(redacted(call.inputs, definition), default=str, ensure_ascii=False)
        attributes["gen_ai.tool.call.arguments"] = arguments[:ARGUMENTS_CHARS]
        attributes["gen_ai.tool.call.result"] = summarize(result.content)
    span.set_attributes(attributes)
    span.end()
    metric: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name}
    if tool_type is not None:
        metric["gen_ai.tool.type"] = tool_type
    if error_type is not None:
        metric["error.type"] = error_type
    assert state.tool_duration is not None
    state.tool_duration.record(time.perf_counter() - call.started, metric)
