"""Staff pages: the tool playground and the telemetry pages."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from datetime import timedelta

from django.contrib.admin.views.decorators import staff_member_required
from django.core.paginator import Paginator
from django.db.models import Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from eunice.jsonlimits import JSONTooDeep, loads_bounded
from registry.context import ToolContext
from registry.execlog import writer
from registry.models import ToolDefinition, ToolExecutionLog
from registry.registry import get_registry
from registry.tenancy import in_scope, tenant_of, tenant_scope


@staff_member_required
def playground(request: HttpRequest) -> HttpResponse:
    """The live tools this staff member may administer (superusers: every tool), by type."""
    tools = ToolDefinition.objects.live().administrable_by(request.user).order_by("tool_type", "name").values(
        "name", "tool_type", "status", "enabled", "tenant_id", "description"
    )
    return render(request, "eunice/playground.html", {"tools": tools})


@staff_member_required
def playground_tool(request: HttpRequest, name: str) -> HttpResponse:
    """A form from the tool's input schema; running it goes through execute_tool.

    Staff run tools as their own tenant (another is a 403); only a superuser may pick one.
    Raises Http404 for a tool outside what they may administer.
    """
    tool = get_object_or_404(ToolDefinition.objects.live().administrable_by(request.user), name=name)
    context = {"tool": tool, "schema_json": json.dumps(tool.input_schema, indent=2), "inputs": "{}"}
    if request.method == "POST":
        raw = request.POST.get("inputs", "{}")
        context["inputs"] = raw
        try:
            inputs = loads_bounded(raw, what="inputs")
        except JSONTooDeep as exc:
            context["input_error"] = str(exc)
            return render(request, "eunice/playground_tool.html", context, status=400)
        except json.JSONDecodeError as exc:
            context["input_error"] = f"inputs are not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
            return render(request, "eunice/playground_tool.html", context, status=400)
        if not isinstance(inputs, dict):
            context["input_error"] = 'inputs must be a JSON object, e.g. {"query": "chart"}'
            return render(request, "eunice/playground_tool.html", context, status=400)
        tenant = request.POST.get("tenant") or tenant_of(request.user) or tool.tenant_id.replace("*", "") or "default"
        scope = tenant_scope(request.user)
        if scope not in (None, tenant):
            context["input_error"] = f"tenant: you act only for your own tenant ({scope or 'none'})"
            return render(request, "eunice/playground_tool.html", context, status=403)
        result = get_registry().execute_tool(
            name, inputs, ToolContext(tenant_id=tenant, user_id=str(request.user.pk))
        )
        writer().flush()
        context.update(
            result=result,
            raw=json.dumps(
                {"error": result.error, "cost": result.cost, "cards": result.cards,
                 "exports": result.exports, "datasets": sorted(result.datasets)},
                indent=2, default=str,
            ),
            log_row=ToolExecutionLog.objects.filter(tool_name=name, user_id=str(request.user.pk)).first(),
            tenant=tenant,
        )
    return render(request, "eunice/playground_tool.html", context)


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
    return render(request, "eunice/telemetry.html", {
        "filters": {**filters, "days": days},
        "page": page,
        "per_tool": _per_tool(logs),
        "cost_by_tool": _cost(request, "name", days),
        "cost_by_tenant": _cost(request, "tenant_id", days),
    })


def _per_tool(logs) -> list[dict]:
    """Ok/Hint/Err counts and p50/p95 duration per tool (durations of at most 50,000 calls)."""
    tallies = logs.envelope_tallies()
    durations: dict[str, list[float]] = defaultdict(list)
    for tool, ms in logs.order_by("-created_at").values_list("tool_name", "execution_ms")[:50_000]:
        durations[tool].append(ms)
    rows = []
    for tool, tally in tallies.items():
        values = sorted(durations.get(tool, [])) or [0.0]
        rows.append({"tool": tool, **tally, "p50": statistics.median(values),
                     "p95": values[min(len(values) - 1, int(len(values) * 0.95))]})
    return rows


def _cost(request: HttpRequest, field: str, days: int) -> list[dict]:
    from conversations.models import UsageLog

    since = timezone.now() - timedelta(days=days)
    usage = in_scope(UsageLog.objects.filter(created_at__gte=since), request.user)
    return list(usage.values(field).annotate(cost=Sum("cost_usd")).order_by("-cost")[:20])


@staff_member_required
def telemetry_conversation(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """A conversation's events in the order they happened."""
    from conversations.models import Conversation, ConversationEvent

    conversation = in_scope(Conversation.objects.filter(pk=conversation_id), request.user).first()
    if conversation is None:
        raise Http404("No such conversation.")
    events = ConversationEvent.objects.filter(conversation=conversation).order_by("turn", "sequence")
    return render(request, "eunice/telemetry_conversation.html", {
        "conversation": conversation,
        "events": [(e, json.dumps(e.data, indent=2, ensure_ascii=False)) for e in events],
    })
