"""The tool-building job queue: ToolBuilder and ToolAuditor as one django-q2 job per request.

A ``tool_jobs`` row moves queued → building → testing, then waits for staff:
approving or rejecting the tool (``registry.custom_tools``) moves it to
approved or rejected. Anything that stops the build moves it to failed with
a message in ``result["error"]``, and deletes the tool it registered: nothing of
a failed build is approvable, and the name is free for a rebuild. Every move is
a conditional update that must change exactly one row, so two workers never run
the same job and a job never moves backwards. Nothing here approves a tool: the
tool stays a draft until the audit and the auditor's verdict are in, and the
outcome is always a custom tool in testing awaiting staff.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from registry import background, builder_llm
from registry.auditor import audit_custom_tool
from registry.background import enqueue
from registry.builder_llm import BuildFailed
from registry.custom_tools import BUILDER_PREFIX, discard_failed_build, register_custom_tool, submit_for_testing
from registry.models import JobStatus, JobType, ToolDefinition, ToolJob

logger = logging.getLogger("eunice.tool_jobs")

JOB_FUNCTION = "registry.tool_jobs.run_build_job"
NAME_RULE = re.compile(r"^[a-z][a-z0-9_]{2,63}$")
OPEN_STATUSES = (JobStatus.QUEUED, JobStatus.BUILDING, JobStatus.TESTING)
INTERNAL_ERROR = "the build stopped on an internal error; the details are in the server log"


def request_build(*, name: str, request: str, tenant_id: str, user_id: str = "", conversation_id: str = "") -> ToolJob:
    """Queue a build of tool ``name`` from a natural-language ``request``; returns the job.

    Raises ValidationError when the name breaks the naming rule, is taken, or
    already has an open job, or when the request is empty.
    """
    if not NAME_RULE.match(name):
        raise ValidationError(
            f"name {name!r} must be 3-64 lower-case letters, digits or underscores, starting with a letter"
        )
    if not request.strip():
        raise ValidationError("the request is empty: say what the tool should do")
    if ToolDefinition.objects.filter(name=name).exists():
        raise ValidationError(f"a tool named {name!r} already exists")
    with transaction.atomic():
        if ToolJob.objects.filter(tool_name=name, status__in=OPEN_STATUSES).exists():
            raise ValidationError(f"a build of {name!r} is already under way")
        job = ToolJob.objects.create(
            tool_name=name,
            job_type=JobType.BUILD,
            tenant_id=tenant_id,
            conversation_id=conversation_id or "",
            spec={"request": request.strip(), "requested_by": str(user_id or "")},
        )
        # The worker must see the committed row.
        transaction.on_commit(lambda: enqueue(JOB_FUNCTION, job.id, group="tool_jobs"))
    return job


def run_build_job(job_id: str) -> str:
    """The django-q2 task: build, register, audit and review one tool. Returns the job's status."""
    if not _move(job_id, JobStatus.QUEUED, JobStatus.BUILDING, 5):
        return "not claimed"
    try:
        return _build(ToolJob.objects.get(pk=job_id))
    except BuildFailed as exc:
        return _fail(job_id, str(exc))
    except Exception:
        # The job boundary: a crash must not leave the row in building forever,
        # and its traceback goes to the log, never to the requester.
        logger.exception("tool job %s crashed", job_id)
        return _fail(job_id, INTERNAL_ERROR)


def _build(job: ToolJob) -> str:
    # Both models are looked up first: without either, fail before spending a call.
    who = {
        "tenant_id": job.tenant_id,
        "user_id": job.spec.get("requested_by", ""),
        "conversation_id": job.conversation_id,
    }
    builder = builder_llm.model_for(builder_llm.BUILDER_ROLE, **who)
    auditor = builder_llm.model_for(builder_llm.AUDITOR_ROLE, **who)
    proposal = builder_llm.propose(builder, name=job.tool_name, request=job.spec.get("request", ""))
    _progress(job.pk, JobStatus.BUILDING, 40)
    try:
        tool = register_custom_tool(
            name=job.tool_name,
            code=proposal.code,
            input_schema=proposal.input_schema,
            description=proposal.description,
            tenant_id=job.tenant_id,
            dependencies=proposal.dependencies,
            test_cases=proposal.test_cases,
            created_by=f"{BUILDER_PREFIX}{job.pk}",
            submit=False,
        )
    except ValidationError as exc:
        raise BuildFailed(f"the proposed tool could not be registered: {'; '.join(exc.messages)}") from None
    if not _move(job.pk, JobStatus.BUILDING, JobStatus.TESTING, 50):
        return "moved elsewhere"
    report = audit_custom_tool(tool)
    _progress(job.pk, JobStatus.TESTING, 75)
    verdict = builder_llm.review(
        auditor,
        name=tool.name,
        report=report,
        proposal={
            "description": tool.description,
            "input_schema": tool.input_schema,
            "code": tool.implementation,
            "dependencies": tool.dependencies,
        },
    )
    ToolDefinition.objects.filter(pk=tool.pk).update(test_results={**report, "review": verdict})
    # Last: only a tool whose audit and verdict are both in reaches staff.
    submit_for_testing(tool, acting_user=None)
    result = {
        "tool": tool.name,
        "tool_id": tool.pk,
        "audit_passed": report["passed"],
        "verdict": verdict["verdict"],
        "summary": verdict["summary"],
    }
    ToolJob.objects.filter(pk=job.pk, status=JobStatus.TESTING).update(
        progress_pct=100, result=result, updated_at=timezone.now()
    )
    return JobStatus.TESTING


def describe(job: ToolJob) -> dict[str, Any]:
    """What a requester may read of a job."""
    return {
        "job_id": job.pk,
        "tool": job.tool_name,
        "status": job.status,
        "progress_pct": job.progress_pct,
        **{k: v for k, v in (job.result or {}).items() if k in ("error", "audit_passed", "verdict", "summary")},
    }


def _move(job_id: str, source: str, target: str, progress: int) -> bool:
    changed = ToolJob.objects.filter(pk=job_id, status=source).update(
        status=target, progress_pct=progress, updated_at=timezone.now()
    )
    return changed == 1


def _progress(job_id: str, status: str, progress: int) -> None:
    ToolJob.objects.filter(pk=job_id, status=status).update(progress_pct=progress, updated_at=timezone.now())


def _fail(job_id: str, message: str) -> str:
    ToolJob.objects.filter(pk=job_id, status__in=(JobStatus.BUILDING, JobStatus.TESTING)).update(
        status=JobStatus.FAILED, result={"error": message}, updated_at=timezone.now()
    )
    discard_failed_build(job_id)
    logger.info("tool job %s failed: %s", job_id, message)
    return JobStatus.FAILED


def _retry_lost(job_id: str) -> None:
    """The build's worker died: its job starts over (the tool it had registered, if any, is discarded)."""
    ToolJob.objects.filter(pk=job_id, status__in=(JobStatus.BUILDING, JobStatus.TESTING)).update(
        status=JobStatus.QUEUED, progress_pct=0, updated_at=timezone.now()
    )
    discard_failed_build(job_id)


def _fail_lost(reason: str, job_id: str) -> None:
    _fail(job_id, f"the build stopped: {reason}")


background.on_lost(JOB_FUNCTION, retry=_retry_lost, fail=_fail_lost)


def reap_stranded_builds() -> int:
    """Builds left building or testing with no job run queued or running (a worker gone before runs
    were recorded, or a run failed without its job): failed with the reason. Returns how many."""
    from registry.models import JobRun, JobRunStatus

    open_runs = JobRun.objects.filter(func=JOB_FUNCTION, status__in=(JobRunStatus.QUEUED, JobRunStatus.RUNNING))
    live = {str(run.args[0]) for run in open_runs.only("args") if run.args}
    stranded = [
        pk
        for pk in ToolJob.objects.filter(status__in=(JobStatus.BUILDING, JobStatus.TESTING)).values_list(
            "pk", flat=True
        )
        if pk not in live
    ]
    for job_id in stranded:
        _fail(job_id, "the build stopped when the worker running it did; request it again")
    return len(stranded)
