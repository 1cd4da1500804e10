"""Handler of query_telemetry: a conversation's events and execution log, for its owner (staff: the
tenant's; superusers may ask for every tenant's execution log)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacatalog.access import is_superuser
from registry.context import ToolContext
from registry.contract import Err, HintException, Ok, uniform_contract
from registry.conversation_records import conversation_records
from registry.declarations import Tool
from registry.models import ToolExecutionLog
from tools.datacommon import quality_warnings, table_ok

if TYPE_CHECKING:
    import pandas as pd


@uniform_contract(name="query_telemetry", is_tabular=True)
def query_telemetry(inputs: dict, context: ToolContext) -> Ok | Err:
    """The execution log (``what: tool_calls``) or the events (``what: events``) of a conversation.

    A superuser may pass ``all_tenants`` for the execution log of every tenant; staff
    act within their tenant like everyone else.
    """
    everywhere = bool(inputs.get("all_tenants"))
    if everywhere and not is_superuser(context):
        return Err("all_tenants is for superusers only: staff see their own tenant", "PermissionDenied")
    # Across tenants the question is about the platform, not the caller's conversation.
    conversation_id = inputs.get("conversation_id") or (None if everywhere else context.conversation_id)
    limit = inputs.get("limit", 100)
    if conversation_id and not everywhere:
        _check_readable(str(conversation_id), context)
    if inputs.get("what", "tool_calls") == "events":
        frame = _events(conversation_id, context.tenant_id, limit)
    else:
        frame = _calls(conversation_id, None if everywhere else context.tenant_id, inputs.get("tool"), limit)
    return table_ok(frame, warnings=quality_warnings(frame) if frame.empty else [])


def _calls(conversation_id: str | None, tenant_id: str | None, tool: str | None, limit: int) -> pd.DataFrame:
    import pandas as pd

    rows = ToolExecutionLog.objects.order_by("-created_at")
    if tenant_id is not None:
        rows = rows.filter(tenant_id=tenant_id)
    if conversation_id:
        rows = rows.filter(conversation_id=conversation_id)
    if tool:
        rows = rows.filter(tool_name=tool)
    fields = ["created_at", "tenant_id", "tool_name", "outcome", "outcome_kind", "execution_ms", "output_summary"]
    return pd.DataFrame(list(rows.values(*fields)[:limit]), columns=fields)


def _check_readable(conversation_id: str, context: ToolContext) -> None:
    """Raise a hint unless the caller may read ``conversation_id``: the one they are in,
    one of their own, or (staff) any of their tenant's. A colleague's answers as one
    that does not exist, as everywhere else (conversations.access)."""
    if not conversation_records().readable(context, conversation_id):
        raise HintException("schema", f"conversation_id: no conversation {conversation_id!r} of yours in this tenant")


def _events(conversation_id: str | None, tenant_id: str, limit: int) -> pd.DataFrame:
    import pandas as pd

    if not conversation_id:
        raise HintException("schema", "conversation_id: events need a conversation (none in this context)")
    events = conversation_records().events(conversation_id, newest_first=True, limit=limit, with_blobs=False)
    fields = ["turn", "sequence", "event_type", "created_at", "data"]
    frame = pd.DataFrame([[getattr(event, field) for field in fields] for event in events], columns=fields)
    frame["data"] = frame["data"].map(lambda value: str(value)[:200])
    return frame


TOOLS = (
    Tool(
        name="query_telemetry",
        description=(
            "Look at what happened in this conversation: its tool calls (tool, outcome, time) or "
            "its events. A superuser may pass all_tenants for every tenant's tool calls."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "what": {"type": "string", "enum": ["tool_calls", "events"], "default": "tool_calls"},
                "conversation_id": {"type": "string"},
                "tool": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 100},
                "all_tenants": {"type": "boolean", "default": False},
            },
            "additionalProperties": False,
        },
        handler=query_telemetry,
        category="outputs",
        status_message="Reading the telemetry",
        timeout_seconds=30,
    ),
)
