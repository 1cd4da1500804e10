"""Staff pages: the telemetry pages (the execution log, cost, a conversation's events)."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.admin.views.decorators import staff_member_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from conversations.models import Conversation, ConversationEvent, UsageLog
from registry.models import ToolExecutionLog
from registry.tenancy import in_scope


@staff_member_required
def telemetry(request: HttpRequest) -> HttpResponse:
    """The execution log with filters, per-tool outcomes and latency, and cost."""
    logs = in_scope(ToolExecutionLog.objects.all(), request.user)
    filters = {key: request.GET.get(key, "").strip() for key in ("tool", "tenant", "user", "success", "days")}
    if filters["tool"]:
        logs = logs.filter(tool_name=filters["tool"])
    if filters["tenant"]:
        logs = logs.filter(tenant_id=filters["tenant"])
    if filters["user"]:
        logs = logs.filter(user_id=filters["user"])
    if filters["success"] in ("yes", "no"):
        logs = logs.filter(success=filters["success"] == "yes")
    days = int(filters["days"]) if filters["days"].isdigit() else 7
    logs = logs.filter(created_at__gte=timezone.now() - timedelta(days=days))
    page = Paginator(logs.order_by("-created_at"), 50).get_page(request.GET.get("page"))
    return render(
        request,
        "eunice/telemetry.html",
        {
            "filters": {**filters, "days": days},
            "page": page,
            "per_tool": _per_tool(logs),
            **_cost(request, filters, days),
        },
    )


def _per_tool(logs) -> list[dict]:
    """Ok/Hint/Err counts and p50/p95 duration per tool (durations of at most 50,000 calls)."""
    tallies = logs.envelope_tallies()
    durations: dict[str, list[float]] = defaultdict(list)
    for tool, ms in logs.order_by("-created_at").values_list("tool_name", "execution_ms")[:50_000]:
        durations[tool].append(ms)
    rows = []
    for tool, tally in tallies.items():
        values = sorted(durations.get(tool, [])) or [0.0]
        rows.append(
            {
                "tool": tool,
                **tally,
                "p50": statistics.median(values),
                "p95": values[min(len(values) - 1, int(len(values) * 0.95))],
            }
        )
    return rows


def _cost(request: HttpRequest, filters: dict[str, str], days: int) -> dict[str, list[dict]]:
    """The cost tables under every filter of the page: by tool (the tools' own usage
    rows), by model (the model requests) and by tenant."""
    since = timezone.now() - timedelta(days=days)
    success = {"yes": True, "no": False}.get(filters["success"])
    matching = UsageLog.objects.filter(created_at__gte=since).matching(
        tool=filters["tool"], tenant=filters["tenant"], user=filters["user"], success=success
    )
    # in_scope after the filters: a staff member's tenant filter never widens their view.
    usage = in_scope(matching, request.user)
    return {
        "cost_by_tool": usage.filter(kind=UsageLog.Kind.TOOL).cost_by("name"),
        "cost_by_model": usage.filter(kind=UsageLog.Kind.LLM).cost_by("name"),
        "cost_by_tenant": usage.cost_by("tenant_id"),
    }


@staff_member_required
def telemetry_conversation(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """A conversation's events in the order they happened."""
    conversation = in_scope(Conversation.objects.filter(pk=conversation_id), request.user).first()
    if conversation is None:
        raise Http404("No such conversation.")
    events = ConversationEvent.objects.filter(conversation=conversation).order_by("turn", "sequence")
    return render(
        request,
        "eunice/telemetry_conversation.html",
        {
            "conversation": conversation,
            "events": [(e, json.dumps(e.data, indent=2, ensure_ascii=False), surface_table(e.data)) for e in events],
        },
    )


@dataclass(frozen=True, slots=True)
class SurfaceTable:
    """Why each tool was in a model call's context, as rows under ``columns``."""

    columns: list[str]
    rows: list[list[str]]
    cut: list[str]


def surface_table(data: object) -> SurfaceTable | None:
    """The ``tools`` of an llm_request event (registry.surface.surface_event) as a table:
    name and reason first, then any other field an entry holds; None for other events.
    Cells are plain text (the template escapes them)."""
    if not isinstance(data, dict) or not isinstance(tools := data.get("tools"), list) or not tools:
        return None
    entries = [entry if isinstance(entry, dict) else {"name": entry} for entry in tools]
    columns = ["name", "reason"]
    for entry in entries:
        columns += [key for key in entry if key not in columns]
    rows = [[_cell(entry.get(column, "")) for column in columns] for entry in entries]
    cut = data.get("tools_cut")
    return SurfaceTable(columns, rows, [str(name) for name in cut] if isinstance(cut, list) else [])


def _cell(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
