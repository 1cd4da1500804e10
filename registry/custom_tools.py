"""Custom tools' lifecycle as actions: register, submit, edit, approve, reject.

draft → testing (the auditor runs) → approved | rejected. Each action is one
service function that writes a ToolReview history row; the CLI, the admin, the
review page and the build jobs only call these. Approval is bound to the
definition hash (``registry.models.HASHED_FIELDS``: code, schema, description,
dependencies, tenant): an edit after approval sends the tool back to testing
and the registry refuses to run a custom tool whose hash is not the approved
one. Approving and rejecting need ``APPROVE_PERMISSION`` and a tool inside the
reviewer's tenant scope (``ToolDefinition.objects.reviewable_by``); approving
over an audit that did not pass needs an override with a reason. No tool
handler calls these.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from registry.auditor import audit_custom_tool
from registry.models import (
    ALL_TENANTS,
    APPROVALS,
    APPROVE_PERMISSION,
    JobStatus,
    ReviewAction,
    ToolDefinition,
    ToolJob,
    ToolReview,
    ToolStatus,
    ToolType,
)

CUSTOM_CATEGORY = "custom"
BUILDER_PREFIX = "builder:"  # ToolDefinition.created_by of a tool a build job registered

# Fields an edit may change without touching what a reviewer signed off on.
SETTINGS_FIELDS = (
    "enabled",
    "category",
    "domain",
    "status_message",
    "large_output",
    "parent_tool",
    "replaced_by_model_capability",
)


class ReviewConflict(Exception):
    """The tool is not in a state the action applies to, or changed under the reviewer."""


class AuditState:
    """Whether the stored auditor report speaks for the current definition."""

    PASSED = "passed"
    FAILED = "failed"
    STALE = "stale"  # the report is of an earlier definition hash
    MISSING = "missing"


def audit_state(tool: ToolDefinition) -> str:
    """One of AuditState's values for ``tool`` as it is now."""
    report = tool.test_results or {}
    if "passed" not in report:
        return AuditState.MISSING
    # Computed, not the stored hash: a bulk update changes the code without save().
    if report.get("definition_hash") != tool.compute_definition_hash():
        return AuditState.STALE
    return AuditState.PASSED if report["passed"] else AuditState.FAILED


@transaction.atomic
def register_custom_tool(
    *,
    name: str,
    code: str,
    input_schema: dict,
    description: str,
    tenant_id: str = ALL_TENANTS,
    dependencies: Iterable[str] = (),
    test_cases: list[dict] | None = None,
    created_by: str = "manual",
    acting_user: AbstractBaseUser | None = None,
    submit: bool = True,
) -> ToolDefinition:
    """Create a custom tool as a draft and, unless ``submit`` is false, submit it for testing.

    Raises ValidationError naming each problem: a taken name, an empty
    description or code, a schema that is not a JSON object schema, or a
    dependency that is not a tool of the tenant.
    """
    deps = check_definition(
        name=name,
        code=code,
        input_schema=input_schema,
        description=description,
        tenant_id=tenant_id,
        dependencies=dependencies,
    )
    if ToolDefinition.objects.filter(name=name).exists():
        raise ValidationError(f"a tool named {name!r} already exists")
    tool = ToolDefinition.objects.create(
        name=name,
        description=description,
        input_schema=input_schema,
        implementation=code,
        tool_type=ToolType.CUSTOM,
        status=ToolStatus.DRAFT,
        category=CUSTOM_CATEGORY,
        tenant_id=tenant_id,
        dependencies=deps,
        created_by=created_by,
        test_results={"cases": list(test_cases or [])},
    )
    ToolReview.record(tool, ReviewAction.CREATE, acting_user, f"created by {created_by}")
    return submit_for_testing(tool, acting_user=acting_user) if submit else tool


def submit_for_testing(tool: ToolDefinition, *, acting_user: AbstractBaseUser | None) -> ToolDefinition:
    """Move a draft or rejected tool to testing, then run the auditor unless its report is current.

    A tool already in testing is audited again if its report is stale or
    missing. Raises ReviewConflict for an approved or a non-custom tool.
    """
    with transaction.atomic():
        tool = ToolDefinition.objects.select_for_update().get(pk=tool.pk)
        if tool.tool_type != ToolType.CUSTOM or tool.status == ToolStatus.APPROVED:
            raise ReviewConflict(f"{tool.name} is {tool.status}; edit it to send it back to testing")
        if tool.status != ToolStatus.TESTING:
            tool.status = ToolStatus.TESTING
            tool.save(update_fields=["status"])
            ToolReview.record(tool, ReviewAction.SUBMIT, acting_user)
    # Outside the row lock: the test cases run in the sandbox for seconds.
    if audit_state(tool) in (AuditState.STALE, AuditState.MISSING):
        audit_custom_tool(tool)
    return tool


def edit_custom_tool(
    tool: ToolDefinition,
    *,
    acting_user: AbstractBaseUser | None,
    code: str | None = None,
    input_schema: dict | None = None,
    description: str | None = None,
    dependencies: Iterable[str] | None = None,
    **settings: Any,
) -> ToolDefinition:
    """Change a custom tool; every change is a history row naming the fields changed.

    A change to what the hash covers sends a tool that is not a draft back to
    testing (a new approval is needed) and runs the auditor. ``settings`` are
    SETTINGS_FIELDS only. Raises ValidationError like register_custom_tool,
    TypeError for a field that cannot be edited.
    """
    unknown = sorted(set(settings) - set(SETTINGS_FIELDS))
    if unknown:
        raise TypeError(f"cannot edit {', '.join(unknown)} of a custom tool")
    with transaction.atomic():
        tool = ToolDefinition.objects.select_for_update().get(pk=tool.pk)
        before = {
            field: getattr(tool, field)
            for field in ("implementation", "input_schema", "description", "dependencies", *settings)
        }
        definition = {
            "implementation": code,
            "input_schema": input_schema,
            "description": description,
            "dependencies": None if dependencies is None else list(dependencies),
        }
        # None leaves a definition field as it is; a setting takes the value given (None clears it).
        for field, value in [*((f, v) for f, v in definition.items() if v is not None), *settings.items()]:
            setattr(tool, field, value)
        tool.dependencies = check_definition(
            name=tool.name,
            code=tool.implementation,
            input_schema=tool.input_schema,
            description=tool.description,
            tenant_id=tool.tenant_id,
            dependencies=tool.dependencies,
        )
        changed = [field for field, value in before.items() if getattr(tool, field) != value]
        if not changed:
            return tool
        if tool.compute_definition_hash() != tool.definition_hash and tool.status != ToolStatus.DRAFT:
            tool.status = ToolStatus.TESTING
        tool.save()
        ToolReview.record(tool, ReviewAction.EDIT, acting_user, f"changed {', '.join(changed)}")
    if tool.status == ToolStatus.TESTING and audit_state(tool) in (AuditState.STALE, AuditState.MISSING):
        audit_custom_tool(tool)
    return tool


def _require_reviewer(acting_user: Any) -> None:
    if (
        acting_user is None
        or not acting_user.is_active
        or not acting_user.is_staff
        or not acting_user.has_perm(APPROVE_PERMISSION)
    ):
        raise PermissionDenied(
            f"only active staff with the {APPROVE_PERMISSION} permission may approve or reject custom tools"
        )


def _reviewable(tool: ToolDefinition, acting_user: Any, expected_hash: str | None) -> ToolDefinition:
    tool = ToolDefinition.objects.select_for_update().get(pk=tool.pk)
    # What is reviewed is the row as it is, even if a bulk update skipped save().
    tool.definition_hash = tool.compute_definition_hash()
    if tool.tool_type != ToolType.CUSTOM:
        raise ReviewConflict(f"{tool.name} is a {tool.tool_type} tool, not a custom one")
    if not ToolDefinition.objects.reviewable_by(acting_user).filter(pk=tool.pk).exists():
        raise PermissionDenied(
            f"{tool.name} belongs to tenant {tool.tenant_id!r}, outside what {acting_user.get_username()} may review"
        )
    if tool.status != ToolStatus.TESTING:
        raise ReviewConflict(f"{tool.name} is {tool.status}; only a tool in testing can be reviewed")
    if expected_hash is not None and expected_hash != tool.definition_hash:
        raise ReviewConflict(f"{tool.name} changed since the review page was opened; review it again")
    return tool


@transaction.atomic
def approve_custom_tool(
    tool: ToolDefinition,
    *,
    acting_user: AbstractBaseUser,
    expected_hash: str | None = None,
    override_reason: str = "",
) -> ToolDefinition:
    """Approve exactly the current definition.

    When the current audit did not pass (failed, stale or missing), approval
    needs ``override_reason``; it is recorded as an override. Raises
    PermissionDenied, ValidationError (an override without a reason) or ReviewConflict.
    """
    _require_reviewer(acting_user)
    tool = _reviewable(tool, acting_user, expected_hash)
    state, reason = audit_state(tool), (override_reason or "").strip()
    if state != AuditState.PASSED and not reason:
        raise ValidationError(f"{tool.name}'s audit is {state}: approving it anyway needs an override with a reason")
    tool.status = ToolStatus.APPROVED
    tool.approved_hash = tool.definition_hash
    tool.rejection_reason = ""
    tool.save(update_fields=["status", "approved_hash", "rejection_reason"])
    if state == AuditState.PASSED:
        ToolReview.record(tool, ReviewAction.APPROVE, acting_user)
    else:
        ToolReview.record(tool, ReviewAction.OVERRIDE, acting_user, f"audit {state}; override: {reason}")
    _settle_jobs(tool, JobStatus.APPROVED)
    return tool


@transaction.atomic
def reject_custom_tool(
    tool: ToolDefinition, *, acting_user: AbstractBaseUser, reason: str, expected_hash: str | None = None
) -> ToolDefinition:
    """Reject with a reason (required). Raises PermissionDenied, ValidationError or ReviewConflict."""
    _require_reviewer(acting_user)
    if not (reason or "").strip():
        raise ValidationError("a rejection needs a reason")
    tool = _reviewable(tool, acting_user, expected_hash)
    tool.status = ToolStatus.REJECTED
    tool.approved_hash = ""
    tool.rejection_reason = reason.strip()
    tool.save(update_fields=["status", "approved_hash", "rejection_reason"])
    ToolReview.record(tool, ReviewAction.REJECT, acting_user, reason.strip())
    _settle_jobs(tool, JobStatus.REJECTED)
    return tool


def _settle_jobs(tool: ToolDefinition, status: str) -> int:
    """Close the build jobs waiting on ``tool`` with staff's decision."""
    return ToolJob.objects.filter(tool_name=tool.name, tenant_id=tool.tenant_id, status=JobStatus.TESTING).update(
        status=status, progress_pct=100, updated_at=timezone.now()
    )


@transaction.atomic
def discard_failed_build(job_id: str) -> None:
    """Delete the tool a failed build job registered, unless staff approved it.

    Nothing of a failed build stays approvable, and its name is free for a rebuild.
    """
    ToolDefinition.objects.filter(tool_type=ToolType.CUSTOM, created_by=f"{BUILDER_PREFIX}{job_id}").exclude(
        status=ToolStatus.APPROVED
    ).delete()


def last_approved(tool: ToolDefinition) -> ToolReview | None:
    """The most recent approval of an earlier definition, for the review diff."""
    return tool.reviews.filter(action__in=APPROVALS).exclude(definition_hash=tool.definition_hash).first()


def check_definition(
    *, name: str, code: str, input_schema: Any, description: str, tenant_id: str, dependencies: Any
) -> list[str]:
    """The definition's dependencies, sorted; raises ValidationError listing every problem."""
    problems = []
    if not name or len(name) > 64 or not name.replace("_", "").isalnum() or not name.isascii():
        problems.append("the name must be 1-64 ASCII letters, digits or underscores")
    if not (code or "").strip():
        problems.append("the code is empty")
    if not (description or "").strip():
        problems.append("the description is empty")
    if not isinstance(input_schema, dict) or input_schema.get("type", "object") != "object":
        problems.append("the input schema must be a JSON Schema object with type 'object'")
    if not (tenant_id or "").strip():
        problems.append("the tenant is empty: give a tenant id, or '*' for every tenant")
    deps, dep_problems = _dependencies(name, tenant_id, dependencies)
    problems += dep_problems
    if problems:
        raise ValidationError(problems)
    return deps


def _dependencies(name: str, tenant_id: str, dependencies: Any) -> tuple[list[str], list[str]]:
    """The declared dependencies, deduplicated and sorted, and what is wrong with them.

    Each must name a live tool the tool's tenant can reach, or the tool itself
    (for recursion). Whether a tool may be called from sandboxed code at all is
    the sandbox's rule, enforced at call time.
    """
    if isinstance(dependencies, str) or not isinstance(dependencies, Iterable):
        return [], ["dependencies must be a list of tool names"]
    names = list(dependencies)
    if not all(isinstance(dep, str) for dep in names):
        return [], ["dependencies must be a list of tool names"]
    wanted = sorted({dep.strip() for dep in names if dep.strip()})
    if not wanted:
        return [], []
    known = {name, *ToolDefinition.objects.live().for_tenant(tenant_id).values_list("name", flat=True)}
    problems = []
    for dep in wanted:
        if dep not in known:
            close = difflib.get_close_matches(dep, sorted(known), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            problems.append(f"dependencies: no tool named {dep!r} is available to tenant {tenant_id!r}{hint}")
    return wanted, problems
