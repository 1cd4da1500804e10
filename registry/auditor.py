"""The non-LLM half of the ToolAuditor: static checks, then the tool's test cases in the sandbox.

The build job (``registry.tool_jobs``) calls ``audit_custom_tool`` and then adds
the ``tool_auditor`` model's verdict under ``review``; the report lands in
``ToolDefinition.test_results`` either way. Auditing never approves anything.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from registry.context import ToolContext
from registry.models import ReviewAction, ToolDefinition, ToolReview
from registry.sandbox import service


def static_problems(tool: ToolDefinition) -> list[str]:
    """What is wrong with the code before it runs: RestrictedPython's and our own rules."""
    import jsonschema

    from registry.sandbox.runner import ToolCodeError, compile_tool

    problems = []
    try:
        compile_tool(tool.implementation)
    except ToolCodeError as exc:
        problems.append(str(exc))
    try:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    except jsonschema.SchemaError as exc:
        problems.append(f"input schema: {exc.message}")
    return problems


def run_case(tool: ToolDefinition, case: dict) -> dict[str, Any]:
    """Run one test case ``{"inputs": {...}, "expect": "text the output contains"}``."""
    context = ToolContext(tenant_id=tool.tenant_id if tool.tenant_id != "*" else "audit", user_id="auditor")
    outcome = service.run_code(
        tool.implementation,
        case.get("inputs") or {},
        context,
        tool_name=tool.name,
        definition_hash=tool.definition_hash,
    )
    output = service.outcome_to_return(outcome)
    text = output.message if hasattr(output, "message") else str(output)
    expected = case.get("expect")
    passed = outcome.ok and (expected is None or str(expected) in text)
    return {
        "inputs": case.get("inputs") or {},
        "expect": expected,
        "passed": passed,
        "output": text[:2000],
        "stopped_by": outcome.stopped_by,
        "layers": outcome.layers,
        "wall_ms": round(outcome.wall_ms, 1),
    }


def audit_custom_tool(tool: ToolDefinition) -> dict[str, Any]:
    """Check and test ``tool``; store and return the report. Never changes its status."""
    # The report speaks for the row as it is, even if a bulk update skipped save().
    tool.definition_hash = tool.compute_definition_hash()
    cases = list((tool.test_results or {}).get("cases") or [])
    problems = static_problems(tool)
    results = [] if problems else [run_case(tool, case) for case in cases]
    report = {
        "cases": cases,
        "static_problems": problems,
        "results": results,
        "passed": not problems and all(r["passed"] for r in results),
        "definition_hash": tool.definition_hash,
        "audited_at": timezone.now().isoformat(),
    }
    with transaction.atomic():
        ToolDefinition.objects.filter(pk=tool.pk).update(test_results=report)
        ToolReview.record(tool, ReviewAction.AUDIT, reason="passed" if report["passed"] else "failed")
    tool.test_results = report
    return report
