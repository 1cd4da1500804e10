"""Handlers of query_telemetry and load_telemetry: a conversation's events and execution log, for
its owner (staff: the tenant's; superusers may ask for every tenant's execution log), to read at
once or to keep as a dataset of the conversation."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.utils import timezone

from datacatalog.access import is_staff, is_superuser
from datacatalog.store import CatalogError, check_name
from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, Warning, uniform_contract
from registry.conversation_records import conversation_records
from registry.declarations import Tool
from registry.models import ToolExecutionLog
from tools.datacommon import catalog, catalog_errors, quality_warnings, table_ok

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


CALL_FIELDS = ["created_at", "tenant_id", "tool_name", "outcome", "outcome_kind", "execution_ms", "output_summary"]
# What a dataset of the calls adds: whose call, in which conversation, and whether it worked.
WIDE_CALL_FIELDS = [*CALL_FIELDS, "conversation_id", "user_id", "success"]


def _calls(
    conversation_id: str | None,
    tenant_id: str | None,
    tool: str | None,
    limit: int,
    *,
    since: datetime | None = None,
    wide: bool = False,
) -> pd.DataFrame:
    import pandas as pd

    rows = ToolExecutionLog.objects.order_by("-created_at")
    if tenant_id is not None:
        rows = rows.filter(tenant_id=tenant_id)
    if conversation_id:
        rows = rows.filter(conversation_id=conversation_id)
    if tool:
        rows = rows.filter(tool_name=tool)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    fields = WIDE_CALL_FIELDS if wide else CALL_FIELDS
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


# What load_telemetry keeps of an event besides its place: the fields most events carry.
EVENT_FIELDS = ("name", "tool_use_id", "subtask", "stop_reason", "cost_usd", "kind")
EVENT_DATA_CHARS = 500
PREVIEW_ROWS = 20


@uniform_contract(name="load_telemetry", is_tabular=True)
@catalog_errors
def load_telemetry(inputs: dict, context: ToolContext) -> Ok | Err:
    """Keep the execution log (``tool_calls``) or the events of this conversation (staff: of
    the whole tenant, ``scope: tenant``) as a dataset, for query and analyze_data."""
    what, scope = inputs.get("what", "tool_calls"), inputs.get("scope", "conversation")
    if scope == "tenant" and not is_staff(context):
        return Err("scope 'tenant' is for staff: you may load this conversation's telemetry", "PermissionDenied")
    books = catalog(context)  # a dataset needs a conversation to keep it: NoConversation before any query
    name = inputs.get("save_as") or f"telemetry_{what}"
    try:
        check_name(name)
    except CatalogError as exc:
        raise HintException("schema", f"save_as: {exc}") from None
    since = timezone.now() - timedelta(days=inputs["within_days"]) if "within_days" in inputs else None
    limit = inputs.get("limit", 5000)
    if what == "events":
        frame = _event_rows(context, scope, since, limit)
    else:
        conversation_id = None if scope == "tenant" else context.conversation_id
        frame = _calls(conversation_id, context.tenant_id, inputs.get("tool"), limit, since=since, wide=True)
    books.save(name, frame, source="tool", source_detail=f"load_telemetry:{scope}:{what}")
    warnings = [*quality_warnings(frame), Warning("info", f"saved as dataset {name!r}: use query or analyze_data")]
    return table_ok(frame, warnings=warnings, effects=Effects(datasets={name: frame}), data=frame.head(PREVIEW_ROWS))


def _event_rows(context: ToolContext, scope: str, since: datetime | None, limit: int) -> pd.DataFrame:
    import pandas as pd

    records = conversation_records()
    if scope == "tenant":
        events = records.tenant_events(context.tenant_id, since=since, limit=limit)
    else:
        events = records.events(str(context.conversation_id), newest_first=True, limit=limit, with_blobs=False)
        events = [e for e in events if since is None or e.created_at >= since]
    columns = ["conversation_id", "turn", "sequence", "event_type", "created_at", *EVENT_FIELDS, "data"]
    rows = [
        [
            event.conversation_id or context.conversation_id,
            event.turn,
            event.sequence,
            event.event_type,
            event.created_at,
            *(_scalar(event.data.get(key)) for key in EVENT_FIELDS),
            json.dumps(event.data, default=str)[:EVENT_DATA_CHARS],
        ]
        for event in events
    ]
    return pd.DataFrame(rows, columns=columns)


def _scalar(value: object) -> str | None:
    """A field of an event as one cell: text, or nothing (one type per column, for parquet)."""
    return None if value is None else str(value)


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
    Tool(
        name="load_telemetry",
        description=(
            "Load this conversation's telemetry as a dataset for the SQL and pandas tools: "
            "its tool calls (which tool, its outcome and duration) or its events (each model call, tool "
            "call, result, status and helper, in order). Staff may pass scope 'tenant' for every "
            "conversation of the tenant. Returns the first rows and the dataset's name."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "what": {"type": "string", "enum": ["tool_calls", "events"], "default": "tool_calls"},
                "scope": {
                    "type": "string",
                    "enum": ["conversation", "tenant"],
                    "default": "conversation",
                    "description": "tenant: every conversation of the tenant (staff only).",
                },
                "tool": {"type": "string", "description": "Only this tool's calls (tool_calls)."},
                "within_days": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "Only telemetry of the past N days (0.5: twelve hours).",
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 50000, "default": 5000},
                "save_as": {"type": "string", "description": "The dataset's name (default telemetry_<what>)."},
            },
            "additionalProperties": False,
        },
        handler=load_telemetry,
        category="data",
        status_message="Loading the telemetry",
        timeout_seconds=60,
    ),
)
