"""Staff pages: the tool playground (the telemetry pages are conversations.staff_views)."""

from __future__ import annotations

import json

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from eunice.jsonlimits import JSONTooDeep, loads_bounded
from registry.context import ToolContext
from registry.execlog import writer
from registry.models import ToolDefinition, ToolExecutionLog
from registry.registry import get_registry
from registry.tenancy import tenant_of, tenant_scope


@staff_member_required
def playground(request: HttpRequest) -> HttpResponse:
    """The live tools this staff member may administer (superusers: every tool), by type."""
    tools = (
        ToolDefinition.objects.live()
        .administrable_by(request.user)
        .order_by("tool_type", "name")
        .values("name", "tool_type", "status", "enabled", "tenant_id", "description")
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
        result = get_registry().execute_tool(name, inputs, ToolContext(tenant_id=tenant, user_id=str(request.user.pk)))
        writer().flush()
        context.update(
            result=result,
            raw=json.dumps(
                {
                    "error": result.error,
                    "cost": result.cost,
                    "cards": result.cards,
                    "exports": result.exports,
                    "datasets": sorted(result.datasets),
                },
                indent=2,
                default=str,
            ),
            log_row=ToolExecutionLog.objects.filter(tool_name=name, user_id=str(request.user.pk)).first(),
            tenant=tenant,
        )
    return render(request, "eunice/playground_tool.html", context)
