"""The staff review page of a custom tool: code, schema, dependencies, auditor report, diff, lifecycle.

Only tools in the viewer's review scope open (``ToolDefinition.objects.reviewable_by``);
any other id is a 404, whatever tenant it belongs to. Every button calls a
service function in ``registry.custom_tools``, which checks the permission again.
"""

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

from registry.custom_tools import (
    AuditState,
    ReviewConflict,
    approve_custom_tool,
    audit_state,
    last_approved,
    reject_custom_tool,
    submit_for_testing,
)
from registry.models import APPROVE_PERMISSION, ReviewAction, ToolDefinition, ToolStatus

_FORMATTER = HtmlFormatter(cssclass="codehilite", linenos="table")
CHANGE_PERMISSION = "registry.change_tooldefinition"
VIEW_PERMISSION = "registry.view_tooldefinition"


def _lines(code: str, schema: dict, description: str, dependencies: list, tenant_id: str) -> list[str]:
    return [
        *description.splitlines(),
        f"--- tenant {tenant_id}",
        "--- dependencies",
        *dependencies,
        "--- schema",
        *json.dumps(schema, indent=2, sort_keys=True).splitlines(),
        "--- code",
        *code.splitlines(),
    ]


def _diff(tool: ToolDefinition) -> str:
    previous = last_approved(tool)
    if previous is None:
        return ""
    old = _lines(
        previous.implementation, previous.input_schema, previous.description, previous.dependencies, previous.tenant_id
    )
    new = _lines(tool.implementation, tool.input_schema, tool.description, tool.dependencies, tool.tenant_id)
    return "\n".join(difflib.unified_diff(old, new, "approved", "current", lineterm=""))


def _html(text: str, lexer) -> str:  # noqa: ANN001
    return mark_safe(highlight(text, lexer, _FORMATTER))  # noqa: S308 - Pygments escapes


def review(admin_site, request: HttpRequest, object_id: str) -> HttpResponse:  # noqa: ANN001
    """The page (GET) or one lifecycle action (POST). Raises Http404 outside the review scope."""
    tool = get_object_or_404(ToolDefinition.objects.reviewable_by(request.user), pk=object_id)
    # Show and bind the hash of the row as it is, even if a bulk update skipped save().
    tool.definition_hash = tool.compute_definition_hash()
    if not (request.user.has_perm(VIEW_PERMISSION) or request.user.has_perm(APPROVE_PERMISSION)):
        raise PermissionDenied("reviewing custom tools needs the permission to view or approve them")
    if request.method == "POST":
        return _act(request, tool)
    diff = _diff(tool)
    report = tool.test_results or {}
    context = {
        **admin_site.each_context(request),
        "title": f"Review {tool.name}",
        "tool": tool,
        "audit": audit_state(tool),
        "report_hash": report.get("definition_hash", ""),
        "override": tool.reviews.filter(action=ReviewAction.OVERRIDE, definition_hash=tool.definition_hash).first(),
        "may_approve": request.user.has_perm(APPROVE_PERMISSION),
        "submit_label": _submit_label(tool) if request.user.has_perm(CHANGE_PERMISSION) else "",
        "code_html": _html(tool.implementation, PythonLexer()),
        "schema_html": _html(json.dumps(tool.input_schema, indent=2), JsonLexer()),
        "report_html": _html(json.dumps(report, indent=2, default=str), JsonLexer()),
        "diff_html": _html(diff, DiffLexer()) if diff else "",
        "pygments_css": mark_safe(_FORMATTER.get_style_defs(".codehilite")),  # noqa: S308
        "reviews": tool.reviews.select_related("acting_user")[:50],
        "opts": ToolDefinition._meta,
        "AuditState": AuditState,
    }
    return TemplateResponse(request, "admin/registry/tool_review.html", context)


def _submit_label(tool: ToolDefinition) -> str:
    """The testing button's label, or "" when submitting would do nothing."""
    if tool.status in (ToolStatus.DRAFT, ToolStatus.REJECTED):
        return "Submit for testing (runs the auditor)"
    if tool.status == ToolStatus.TESTING and audit_state(tool) in (AuditState.STALE, AuditState.MISSING):
        return "Run the auditor"
    return ""


def _act(request: HttpRequest, tool: ToolDefinition) -> HttpResponse:
    expected = request.POST.get("definition_hash") or None
    try:
        if "submit" in request.POST:
            if not request.user.has_perm(CHANGE_PERMISSION):
                raise PermissionDenied("submitting a tool for testing needs the permission to change it")
            tool = submit_for_testing(tool, acting_user=request.user)
            messages.success(request, f"{tool.name} is in testing; audit {audit_state(tool)}.")
        elif "approve" in request.POST:
            approve_custom_tool(
                tool,
                acting_user=request.user,
                expected_hash=expected,
                override_reason=request.POST.get("override_reason", ""),
            )
            messages.success(request, f"{tool.name} approved.")
        else:
            reject_custom_tool(
                tool, acting_user=request.user, reason=request.POST.get("reason", ""), expected_hash=expected
            )
            messages.success(request, f"{tool.name} rejected.")
    except (PermissionDenied, ValidationError, ReviewConflict) as exc:
        messages.error(request, " ".join(getattr(exc, "messages", [str(exc)])))
    return redirect(request.path)
