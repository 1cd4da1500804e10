"""Custom tools' lifecycle as actions: register, edit, approve, reject.

Each action is one atomic service function that writes a ToolReview audit row.
Approval is bound to the definition hash (code + schema + description): an
edit after approval sends the tool back to testing (``ToolDefinition.save``)
and the registry refuses to run a custom tool whose hash is not the approved
one. Only active staff approve or reject; no tool handler calls these.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from registry.models import (
    ALL_TENANTS,
    JobStatus,
    ReviewAction,
    ToolDefinition,
    ToolJob,
    ToolReview,
    ToolStatus,
    ToolType,
)

CUSTOM_CATEGORY = "custom"


class ReviewConflict(Exception):
    """The tool is not in a state the action applies to, or changed under the reviewer."""


def _audit(tool: ToolDefinition, action: str, acting_user: Any, reason: str = "") -> ToolReview:
    return ToolReview.objects.create(
        tool=tool, action=action, acting_user=acting_user, reason=reason,
        definition_hash=tool.definition_hash, implementation=tool.implementation,
        input_schema=tool.input_schema, description=tool.description,
    )


@transaction.atomic
def register_custom_tool(
    *,
    name: str,
    code: str,
    input_schema: dict,
    description: str,
    tenant_id: str = ALL_TENANTS,
    test_cases: list[dict] | None = None,
    created_by: str = "manual",
    acting_user: AbstractBaseUser | None = None,
) -> ToolDefinition:
    """Create a custom tool as a draft and submit it for testing.

    Raises ValidationError for a taken name, an empty description or code, or
    a schema that is not a JSON object schema.
    """
    _validate(name=name, code=code, input_schema=input_schema, description=description)
    if ToolDefinition.objects.filter(name=name).exists():
        raise ValidationError(f"a tool named {name!r} already exists")
    tool = ToolDefinition.objects.create(
        name=name, description=description, input_schema=input_schema, implementation=code,
        tool_type=ToolType.CUSTOM, status=ToolStatus.DRAFT, category=CUSTOM_CATEGORY,
        tenant_id=tenant_id, created_by=created_by,
        test_results={"cases": list(test_cases or [])},
    )
    return submit_for_testing(tool, acting_user=acting_user)


@transaction.atomic
def submit_for_testing(tool: ToolDefinition, *, acting_user: AbstractBaseUser | None) -> ToolDefinition:
    tool.status = ToolStatus.TESTING
    tool.save(update_fields=["status"])
    _audit(tool, ReviewAction.SUBMIT, acting_user)
    return tool


@transaction.atomic
def edit_custom_tool(
    tool: ToolDefinition,
    *,
    acting_user: AbstractBaseUser | None,
    code: str | None = None,
    input_schema: dict | None = None,
    description: str | None = None,
) -> ToolDefinition:
    """Change a custom tool's definition; it goes back to testing and needs a new approval."""
    tool = ToolDefinition.objects.select_for_update().get(pk=tool.pk)
    tool.implementation = tool.implementation if code is None else code
    tool.input_schema = tool.input_schema if input_schema is None else input_schema
    tool.description = tool.description if description is None else description
    _validate(name=tool.name, code=tool.implementation, input_schema=tool.input_schema,
              description=tool.description)
    tool.status = ToolStatus.TESTING
    tool.save()
    _audit(tool, ReviewAction.SUBMIT, acting_user)
    return tool


def _require_staff(acting_user: Any) -> None:
    if acting_user is None or not acting_user.is_active or not acting_user.is_staff:
        raise PermissionDenied("only active staff may approve or reject custom tools")


def _reviewable(tool: ToolDefinition, expected_hash: str | None) -> ToolDefinition:
    tool = ToolDefinition.objects.select_for_update().get(pk=tool.pk)
    if tool.tool_type != ToolType.CUSTOM:
        raise ReviewConflict(f"{tool.name} is a {tool.tool_type} tool, not a custom one")
    if tool.status != ToolStatus.TESTING:
        raise ReviewConflict(f"{tool.name} is {tool.status}; only a tool in testing can be reviewed")
    if expected_hash is not None and expected_hash != tool.definition_hash:
        raise ReviewConflict(f"{tool.name} changed since the review page was opened; review it again")
    return tool


@transaction.atomic
def approve_custom_tool(
    tool: ToolDefinition, *, acting_user: AbstractBaseUser, expected_hash: str | None = None
) -> ToolDefinition:
    """Approve exactly the current definition. Raises PermissionDenied or ReviewConflict."""
    _require_staff(acting_user)
    tool = _reviewable(tool, expected_hash)
    tool.status = ToolStatus.APPROVED
    tool.approved_hash = tool.definition_hash
    tool.rejection_reason = ""
    tool.save(update_fields=["status", "approved_hash", "rejection_reason"])
    _audit(tool, ReviewAction.APPROVE, acting_user)
    _settle_jobs(tool, JobStatus.APPROVED)
    return tool


@transaction.atomic
def reject_custom_tool(
    tool: ToolDefinition, *, acting_user: AbstractBaseUser, reason: str, expected_hash: str | None = None
) -> ToolDefinition:
    """Reject with a reason (required). Raises PermissionDenied, ValidationError or ReviewConflict."""
    _require_staff(acting_user)
    if not (reason or "").strip():
        raise ValidationError("a rejection needs a reason")
    tool = _reviewable(tool, expected_hash)
    tool.status = ToolStatus.REJECTED
    tool.approved_hash = ""
    tool.rejection_reason = reason.strip()
    tool.save(update_fields=["status", "approved_hash", "rejection_reason"])
    _audit(tool, ReviewAction.REJECT, acting_user, reason.strip())
    _settle_jobs(tool, JobStatus.REJECTED)
    return tool


def _settle_jobs(tool: ToolDefinition, status: str) -> int:
    """Close the build jobs waiting on ``tool`` with staff's decision."""
    return ToolJob.objects.filter(tool_name=tool.name, tenant_id=tool.tenant_id, status=JobStatus.TESTING).update(
        status=status, progress_pct=100, updated_at=timezone.now())


def last_approved(tool: ToolDefinition) -> ToolReview | None:
    """The most recent approval of an earlier definition, for the review diff."""
    return (
        tool.reviews.filter(action=ReviewAction.APPROVE)
        .exclude(definition_hash=tool.definition_hash)
        .first()
    )


def _validate(*, name: str, code: str, input_schema: Any, description: str) -> None:
    problems = []
    if not name or len(name) > 64 or not name.replace("_", "").isalnum() or not name.isascii():
        problems.append("the name must be 1-64 ASCII letters, digits or underscores")
    if not (code or "").strip():
        problems.append("the code is empty")
    if not (description or "").strip():
        problems.append("the description is empty")
    if not isinstance(input_schema, dict) or input_schema.get("type", "object") != "object":
        problems.append("the input schema must be a JSON Schema object with type 'object'")
    if problems:
        raise ValidationError(problems)
