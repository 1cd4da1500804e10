"""Staff pages: the tool playground (the telemetry pages are conversations.staff_views)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from eunice.jsonlimits import JSONTooDeep, loads_bounded
from registry.context import ToolContext
from registry.conversation_records import conversation_records
from registry.execlog import writer
from registry.models import ToolDefinition, ToolExecutionLog
from registry.registry import get_registry
from registry.tenancy import acting_tenants, tenant_of, tenant_scope


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


# The conversations the playground offers: enough to find a recent one, one query.
PICKER_SIZE = 50


@staff_member_required
def playground_tool(request: HttpRequest, name: str) -> HttpResponse:
    """A form from the tool's input schema; running it goes through execute_tool.

    Staff run tools as their own tenant (another is a 403); only a superuser may pick one.
    A run may take one of the user's own conversations as its context (data tools need
    one); any other conversation is a 403. Raises Http404 for a tool outside what they
    may administer.
    """
    tool = get_object_or_404(ToolDefinition.objects.live().administrable_by(request.user), name=name)
    context = _form_context(request, tool)
    if request.method != "POST":
        return render(request, "eunice/playground_tool.html", context)
    raw = request.POST.get("inputs", "{}")
    tenant = request.POST.get("tenant") or context["tenant"]
    context.update(inputs=raw, conversation=request.POST.get("conversation", ""))
    if not context["tenant_fixed"]:
        context["tenant"] = tenant  # the superuser's pick stays picked
    inputs, error = _parsed_inputs(raw)
    if error:
        return _refused(request, context, error, 400)
    # Checked here, not only by the select: a form can post any id.
    picked = conversation_records().one_of(request.user, context["conversation"]) if context["conversation"] else None
    if context["conversation"] and picked is None:
        return _refused(request, context, "conversation: pick one of your own conversations", 403)
    scope = context["scope"]
    if scope not in (None, tenant):
        return _refused(request, context, f"tenant: you act only for your own tenant ({scope or 'none'})", 403)
    if picked is not None and picked.tenant_id != tenant:
        return _refused(request, context, f"tenant: the conversation belongs to tenant {picked.tenant_id}", 400)
    call = ToolContext(tenant_id=tenant, user_id=str(request.user.pk), conversation_id=picked.id if picked else None)
    context.update(_run(request, name, inputs, call), tenant=tenant)
    return render(request, "eunice/playground_tool.html", context)


def _run(request: HttpRequest, name: str, inputs: dict, call: ToolContext) -> dict[str, Any]:
    """Run the tool through execute_tool; what the page shows of it, its log row included."""
    result = get_registry().execute_tool(name, inputs, call)
    writer().flush()
    raw = {
        "error": result.error,
        "cost": result.cost,
        "cards": result.cards,
        "exports": result.exports,
        "datasets": sorted(result.datasets),
    }
    return {
        "result": result,
        "raw": json.dumps(raw, indent=2, default=str),
        "log_row": ToolExecutionLog.objects.filter(tool_name=name, user_id=str(request.user.pk)).first(),
    }


def _form_context(request: HttpRequest, tool: ToolDefinition) -> dict[str, Any]:
    """The form's choices: the user's own conversations, and the tenants they may act for
    (staff: their own, shown as a fixed value; a superuser: a select)."""
    scope = tenant_scope(request.user)  # staff: their tenant; a superuser: None (any)
    own = scope if scope is not None else tenant_of(request.user)
    # Staff without a membership get a default too: running for it is refused (403).
    default = own or tool.tenant_id.replace("*", "") or "default"
    fixed = scope is not None
    tenants = acting_tenants(scope)
    if not fixed and default not in tenants:
        tenants = sorted([*tenants, default])
    return {
        "tool": tool,
        "schema_json": json.dumps(tool.input_schema, indent=2),
        "inputs": "{}",
        "conversations": conversation_records().recent_of(request.user, PICKER_SIZE),
        "conversation": "",
        "tenants": tenants,
        "tenant_fixed": fixed,
        "tenant": default,
        "scope": scope,
    }


def _parsed_inputs(raw: str) -> tuple[dict, str]:
    """The inputs as a JSON object, or why they are not one."""
    try:
        inputs = loads_bounded(raw, what="inputs")
    except JSONTooDeep as exc:
        return {}, str(exc)
    except json.JSONDecodeError as exc:
        return {}, f"inputs are not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    if not isinstance(inputs, dict):
        return {}, 'inputs must be a JSON object, e.g. {"query": "chart"}'
    return inputs, ""


def _refused(request: HttpRequest, context: dict[str, Any], error: str, status: int) -> HttpResponse:
    return render(request, "eunice/playground_tool.html", {**context, "input_error": error}, status=status)
