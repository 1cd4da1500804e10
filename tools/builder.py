"""Handlers of the builder tools: request a custom tool build, and check on it.

Building runs model-written code in the sandbox (the auditor's test cases), so
requesting one needs staff or the ``registry.add_tooljob`` permission, and the
custom-tools feature must be on. Jobs are read only within the caller's tenant.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError

from registry.availability import custom_tools_on
from registry.context import ToolContext
from registry.contract import Err, HintException, Ok, uniform_contract
from registry.declarations import Tool
from registry.handlers import requires
from registry.models import JobStatus, ToolJob
from registry.tool_jobs import describe, request_build
from tools.actors import may

BUILD_PERMISSION = "registry.add_tooljob"


@requires(custom_tools_on)
@uniform_contract(name="build_custom_tool", is_tabular=False)
def build_custom_tool(inputs: dict, context: ToolContext) -> Ok | Err:
    """Queue a build; returns the job id. Err when the caller may not build (with custom tools
    off the tool is not offered, and a call of it is answered with a Hint: ``@requires``)."""
    if not may(context, BUILD_PERMISSION):
        return Err(f"building a tool needs a staff member or the {BUILD_PERMISSION} permission", "PermissionDenied")
    try:
        job = request_build(
            name=inputs["name"],
            request=inputs["request"],
            tenant_id=context.tenant_id,
            user_id=context.user_id or "",
            conversation_id=str(context.conversation_id or ""),
        )
    except ValidationError as exc:
        raise HintException(
            "schema", "; ".join(exc.messages) + " (choose another name, or find the existing tool with search_tools)"
        ) from None
    return Ok(
        rows=1,
        data=(
            f"Build job {job.pk} queued for tool {job.tool_name}. Follow it with tool_job_status "
            f'{{"job_id": "{job.pk}"}}. When it reaches testing, a staff member reviews the tool; '
            "it becomes callable only once they approve it."
        ),
    )


@uniform_contract(name="tool_job_status", is_tabular=False)
def tool_job_status(inputs: dict, context: ToolContext) -> Ok:
    """The job's status, progress and outcome; a fetch hint for an id this tenant does not have."""
    jobs = ToolJob.objects.for_tenant(context.tenant_id)
    job = jobs.filter(pk=inputs["job_id"]).first()
    if job is None:
        recent = [
            {"label": f"{j.pk} ({j.tool_name}, {j.status})", "score": 1.0 - n / 100}
            for n, j in enumerate(jobs.only("id", "tool_name", "status")[:5])
        ]
        raise HintException(
            "fetch",
            f"no build job {inputs['job_id']!r} for this tenant",
            recent,
            narrow="use the job id build_custom_tool returned",
        )
    facts = describe(job)
    lines = [f"Job {job.pk}: tool {job.tool_name} is {job.status} ({job.progress_pct}%)."]
    lines += [f"{key}: {facts[key]}" for key in ("error", "audit_passed", "verdict", "summary") if key in facts]
    if job.status == JobStatus.TESTING and job.progress_pct == 100:
        lines.append("Built and audited; waiting for a staff member to approve or reject it.")
    return Ok(rows=1, data="\n".join(lines))


TOOLS = (
    Tool(
        name="build_custom_tool",
        description=(
            "Ask for a new tool to be written when no existing tool (see search_tools) can do a task. "
            "Describe in plain words what it should take and return; a builder model writes it, an "
            "auditor tests it in a sandbox, and a staff member must approve it before anyone can call "
            "it. Returns a job id at once; follow it with tool_job_status. Needs staff or the "
            "registry.add_tooljob permission."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "pattern": "^[a-z][a-z0-9_]{2,63}$",
                    "description": "The new tool's name: lower_snake_case, 3-64 characters.",
                },
                "request": {
                    "type": "string",
                    "minLength": 10,
                    "maxLength": 4000,
                    "description": "What the tool should do, its inputs and its output.",
                },
            },
            "required": ["name", "request"],
            "additionalProperties": False,
        },
        handler=build_custom_tool,
        category="builder",
        status_message="Queueing a tool build",
        timeout_seconds=15,
    ),
    Tool(
        name="tool_job_status",
        description=(
            "Check a tool build started with build_custom_tool: its status (queued, building, "
            "testing = awaiting staff review, approved, rejected, failed), progress and any error."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "job_id": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 32,
                    "description": "The job id build_custom_tool returned.",
                },
            },
            "required": ["job_id"],
            "additionalProperties": False,
        },
        handler=tool_job_status,
        category="builder",
        status_message="Checking a tool build",
        timeout_seconds=10,
    ),
)
