"""Skills' and primitives' lifecycle as actions: create, edit, validate, approve, reject, import, export.

pending → approved | rejected, and any change to what the hash covers sends a row
back to pending. A skill's hash covers every file of its folder (path and bytes,
``SkillFolder.content_hash``); a primitive's covers its tenant, name, description,
schemas, code and examples. Approval stores that hash, and a row is used only
while its current hash is the approved one (``Capability.is_usable``), so a bulk
update cannot slip past review. Approving and rejecting need active staff with
the kind's permission and a row inside their tenant scope; approving a primitive
whose current validation did not pass needs an override with a reason. Each
action writes a CapabilityReview row. Tool handlers create, edit and validate;
only people approve.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from registry.tenancy import tenant_scope
from tools.lib.skill_format import SkillFolder, SkillFormatError, from_zip
from tools.models import Capability, CapabilityReview, CapabilityStatus, Primitive, Skill

Row = TypeVar("Row", Skill, Primitive)
PRIMITIVE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_EXAMPLES = 20
MAX_CODE_CHARS = 20_000


class CapabilityConflict(Exception):
    """The row is not in a state the action applies to, or changed under the reviewer."""


def kind_of(row: Capability) -> str:
    return "skill" if isinstance(row, Skill) else "primitive"


def record(row: Capability, action: str, *, acting_user: Any = None, actor: str = "", reason: str = "") -> None:
    """One history row for ``action`` on ``row`` as it is now."""
    CapabilityReview.objects.create(
        kind=kind_of(row),
        tenant_id=row.tenant_id,
        name=row.name,
        action=action,
        content_hash=row.content_hash,
        acting_user=acting_user if getattr(acting_user, "pk", None) else None,
        actor=actor or getattr(acting_user, "username", ""),
        reason=reason,
    )


# Skills


@transaction.atomic
def create_skill(*, tenant_id: str, folder: SkillFolder, actor: str, acting_user: Any = None) -> Skill:
    """A new skill of ``tenant_id``, pending review. Raises ValidationError for a taken name
    and SkillFormatError for a folder that breaks the format."""
    manifest = folder.manifest
    if Skill.objects.for_tenant(tenant_id).filter(name=manifest.name).exists():
        raise ValidationError(f"a skill named {manifest.name!r} already exists; change it with update_skill")
    skill = Skill.objects.create(
        tenant_id=tenant_id,
        name=manifest.name,
        description=manifest.description,
        archive=folder.to_zip(),
        content_hash=folder.content_hash(),
        created_by=actor,
    )
    record(skill, "create", acting_user=acting_user, actor=actor)
    return skill


@transaction.atomic
def update_skill(skill: Skill, *, folder: SkillFolder, actor: str, acting_user: Any = None) -> Skill:
    """Replace the skill's files. A change sends it back to pending (a new approval is needed);
    the same files change nothing. Raises SkillFormatError when the new folder renames the skill."""
    skill = Skill.objects.select_for_update().get(pk=skill.pk)
    manifest = folder.manifest
    if manifest.name != skill.name:
        raise SkillFormatError(f"SKILL.md: name {manifest.name!r} is not the skill's name {skill.name!r}")
    content_hash = folder.content_hash()
    if content_hash == skill.compute_hash():
        return skill
    skill.archive = folder.to_zip()
    skill.description = manifest.description
    skill.content_hash = content_hash
    skill.status = CapabilityStatus.PENDING
    skill.save()
    record(skill, "edit", acting_user=acting_user, actor=actor)
    return skill


def import_skill(data: bytes, *, tenant_id: str, actor: str, acting_user: Any = None) -> Skill:
    """A skill from a zip (bounded: ``skill_format.from_zip``): created, or the tenant's skill of
    that name updated. Raises SkillFormatError, or InputTooLarge for an archive over the limits."""
    folder = from_zip(data)
    existing = Skill.objects.for_tenant(tenant_id).filter(name=folder.manifest.name).first()
    if existing is not None:
        return update_skill(existing, folder=folder, actor=actor, acting_user=acting_user)
    return create_skill(tenant_id=tenant_id, folder=folder, actor=actor, acting_user=acting_user)


def export_skill(skill: Skill) -> bytes:
    """The skill's folder as a zip with one top directory named like the skill."""
    return skill.folder().to_zip()


# Primitives


def check_primitive(
    *, name: str, description: str, input_schema: Any, output_schema: Any, code: str, examples: Any
) -> None:
    """Raises ValidationError listing every problem of a primitive's definition."""
    import jsonschema  # about 0.2 s: only where a primitive is checked, not at start-up

    problems = []
    if not PRIMITIVE_NAME.match(name or ""):
        problems.append("name: 1-64 lower-case letters, digits or underscores, starting with a letter")
    if not (description or "").strip():
        problems.append("description: say what the function computes")
    for field, schema in (("input_schema", input_schema), ("output_schema", output_schema)):
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            problems.append(f"{field}: not a JSON Schema ({exc.message})")
    if not isinstance(input_schema, dict) or input_schema.get("type") != "object":
        problems.append("input_schema: must be a JSON Schema with type 'object'")
    if not (code or "").strip() or len(code) > MAX_CODE_CHARS:
        problems.append(f"code: 1-{MAX_CODE_CHARS:,} characters of Python that assign `result`")
    if not isinstance(examples, list) or not 1 <= len(examples) <= MAX_EXAMPLES:
        problems.append(f"examples: 1-{MAX_EXAMPLES} examples, each {{'input': {{...}}, 'output': ...}}")
    elif not all(isinstance(e, dict) and set(e) == {"input", "output"} for e in examples):
        problems.append("examples: each example is exactly {'input': {...}, 'output': ...}")
    if problems:
        raise ValidationError(problems)


@transaction.atomic
def create_primitive(*, tenant_id: str, actor: str, acting_user: Any = None, **definition: Any) -> Primitive:
    """A new primitive of ``tenant_id``, pending validation and review. ``definition``: name,
    description, input_schema, output_schema, code, examples. Raises ValidationError."""
    check_primitive(**definition)
    if Primitive.objects.for_tenant(tenant_id).filter(name=definition["name"]).exists():
        raise ValidationError(f"name: a primitive named {definition['name']!r} already exists; pick another name")
    primitive = Primitive(tenant_id=tenant_id, created_by=actor, **definition)
    primitive.content_hash = primitive.compute_hash()
    primitive.save()
    record(primitive, "create", acting_user=acting_user, actor=actor)
    return primitive


@transaction.atomic
def record_validation(primitive: Primitive, results: list[dict], *, actor: str) -> Primitive:
    """Store the results of running ``primitive`` on its examples, bound to its current hash."""
    primitive = Primitive.objects.select_for_update().get(pk=primitive.pk)
    passed = bool(results) and all(result["passed"] for result in results)
    primitive.validation = {"hash": primitive.compute_hash(), "passed": passed, "results": results}
    primitive.save(update_fields=["validation", "updated_at"])
    record(primitive, "validate", actor=actor, reason="passed" if passed else "failed")
    return primitive


def validation_passed(primitive: Primitive) -> bool:
    """Whether the stored validation passed and speaks for the primitive as it is now."""
    report = primitive.validation or {}
    return bool(report.get("passed")) and report.get("hash") == primitive.compute_hash()


# Review


def _require_reviewer(row: Capability, acting_user: Any) -> None:
    permission = f"tools.approve_{kind_of(row)}"
    if not (
        acting_user is not None and acting_user.is_active and acting_user.is_staff and acting_user.has_perm(permission)
    ):
        raise PermissionDenied(f"only active staff with the {permission} permission may approve or reject")
    scope = tenant_scope(acting_user)
    if scope is not None and scope != row.tenant_id:
        raise PermissionDenied(f"{row.name} belongs to tenant {row.tenant_id!r}, outside your tenant")


def _reviewable(row: Row, acting_user: Any, expected_hash: str | None) -> Row:
    row = type(row).objects.select_for_update().get(pk=row.pk)
    _require_reviewer(row, acting_user)
    # What is reviewed is the content as it is, even if a bulk update skipped save().
    row.content_hash = row.compute_hash()
    if expected_hash is not None and expected_hash != row.content_hash:
        raise CapabilityConflict(f"{row.name} changed since it was opened for review; review it again")
    return row


@transaction.atomic
def approve(row: Row, *, acting_user: Any, expected_hash: str | None = None, override: str = "") -> Row:
    """Approve exactly the row's current content. A primitive whose validation did not pass for
    this content needs ``override`` (a reason). Raises PermissionDenied, ValidationError or
    CapabilityConflict (already approved as it is)."""
    row = _reviewable(row, acting_user, expected_hash)
    if row.is_usable():
        raise CapabilityConflict(f"{row.name} is already approved as it is")
    reason = (override or "").strip()
    if isinstance(row, Primitive) and not validation_passed(row) and not reason:
        raise ValidationError(f"{row.name} has not passed validation on its examples: approving needs an override")
    row.status = CapabilityStatus.APPROVED
    row.approved_hash = row.content_hash
    row.rejection_reason = ""
    row.save(update_fields=["status", "approved_hash", "content_hash", "rejection_reason", "updated_at"])
    record(row, "approve", acting_user=acting_user, reason=f"override: {reason}" if reason else "")
    return row


@transaction.atomic
def reject(row: Row, *, acting_user: Any, reason: str, expected_hash: str | None = None) -> Row:
    """Reject with a reason (required). Raises PermissionDenied, ValidationError or CapabilityConflict."""
    if not (reason or "").strip():
        raise ValidationError("a rejection needs a reason")
    row = _reviewable(row, acting_user, expected_hash)
    row.status = CapabilityStatus.REJECTED
    row.approved_hash = ""
    row.rejection_reason = reason.strip()
    row.save(update_fields=["status", "approved_hash", "content_hash", "rejection_reason", "updated_at"])
    record(row, "reject", acting_user=acting_user, reason=reason.strip())
    return row
