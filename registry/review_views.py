"""The staff review page of a custom tool: highlighted code, schema, auditor report, diff, verdict."""

from __future__ import annotations

import difflib
import json

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.utils.safestring import mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, JsonLexer, PythonLexer

from registry.custom_tools import ReviewConflict, approve_custom_tool, last_approved, reject_custom_tool
from registry.models import ToolDefinition, ToolType

_FORMATTER = HtmlFormatter(cssclass="codehilite", linenos="table")


def _diff(tool: ToolDefinition) -> str:
    previous = last_approved(tool)
    if previous is None:
        return ""
    def lines(code: str, schema: dict, description: str) -> list[str]:
        return [*description.splitlines(), "--- schema", *json.dumps(schema, indent=2, sort_keys=True).splitlines(),
                "--- code", *code.splitlines()]
    old = lines(previous.implementation, previous.input_schema, previous.description)
    new = lines(tool.implementation, tool.input_schema, tool.description)
    return "\n".join(difflib.unified_diff(old, new, "approved", "current", lineterm=""))


def review(admin_site, request: HttpRequest, object_id: str) -> HttpResponse:
    tool = get_object_or_404(ToolDefinition, pk=object_id, tool_type=ToolType.CUSTOM)
    if request.method == "POST":
        return _decide(request, tool)
    diff = _diff(tool)
    context = {
        **admin_site.each_context(request),
        "title": f"Review {tool.name}",
        "tool": tool,
        "code_html": mark_safe(highlight(tool.implementation, PythonLexer(), _FORMATTER)),  # noqa: S308 - Pygments escapes
        "schema_html": mark_safe(highlight(json.dumps(tool.input_schema, indent=2), JsonLexer(), _FORMATTER)),  # noqa: S308
        "report_html": mark_safe(highlight(json.dumps(tool.test_results, indent=2, default=str), JsonLexer(), _FORMATTER)),  # noqa: S308
        "diff_html": mark_safe(highlight(diff, DiffLexer(), _FORMATTER)) if diff else "",  # noqa: S308
        "pygments_css": mark_safe(_FORMATTER.get_style_defs(".codehilite")),  # noqa: S308
        "reviews": tool.reviews.select_related("acting_user")[:20],
        "opts": ToolDefinition._meta,
    }
    return TemplateResponse(request, "admin/registry/tool_review.html", context)


def _decide(request: HttpRequest, tool: ToolDefinition) -> HttpResponse:
    expected = request.POST.get("definition_hash") or None
    try:
        if "approve" in request.POST:
            approve_custom_tool(tool, acting_user=request.user, expected_hash=expected)
            messages.success(request, f"{tool.name} approved.")
        else:
            reject_custom_tool(tool, acting_user=request.user, reason=request.POST.get("reason", ""),
                               expected_hash=expected)
            messages.success(request, f"{tool.name} rejected.")
    except (PermissionDenied, ValidationError, ReviewConflict) as exc:
        messages.error(request, " ".join(getattr(exc, "messages", [str(exc)])))
    return redirect(request.path)
