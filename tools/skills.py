"""Handlers of the skill tools: use, create and update a skill, run its scripts, read its assets.

A skill is an Agent Skills folder (tools.lib.skill_format) that belongs to a
tenant. The model or a person writes one; it is used only once staff approved
exactly its current files (tools.capability_actions). ``use_skill`` loads it in
steps: without a name, the tenant's approved skills by name and description;
with one, its instructions and the list of its files. Scripts are custom-tool
code: ``run_skill_script`` runs a ``.py`` file in the sandbox under the custom
tools' language policy and limits, its ``call_tool`` reaching only the tools the
skill lists in ``allowed-tools``. Every lookup is cut to the caller's tenant.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from registry.availability import custom_tools_on
from registry.context import ToolContext
from registry.contract import Err, HintException, Ok, uniform_contract
from registry.declarations import Tool
from registry.handlers import requires, requires_tenant
from registry.sandbox import service
from tools import capability_actions as actions
from tools import holdings, skill_shelf
from tools.actors import may
from tools.lib.closest import not_found
from tools.lib.skill_format import MANIFEST, Manifest, SkillFolder, SkillFormatError, check_path, render_manifest
from tools.models import CapabilityStatus, Skill

MAX_ASSET_CHARS = 20_000
EDIT_PERMISSION = "tools.change_skill"
SKILL_NAME = {"type": "string", "minLength": 1, "maxLength": 64, "description": "The skill's name (its folder)."}
FILES = {
    "type": "object",
    "additionalProperties": {"type": ["string", "null"]},
    "maxProperties": 50,
    "description": (
        "Scripts and assets beside the instructions, keyed by their place in the folder (e.g. scripts/summarise.py, "
        "assets/template.md), as UTF-8 text; in update_skill, null deletes one."
    ),
}


def _actor(context: ToolContext) -> str:
    return f"user:{context.user_id}" if context.user_id else "model"


def _find(context: ToolContext, name: str, *, usable: bool) -> Skill:
    """The tenant's skill ``name``; a fetch hint with the closest names otherwise, or when
    ``usable`` and it is not approved as it is now."""
    skills = Skill.objects.for_tenant(context.tenant_id)
    skill = skills.filter(name=name).first()
    if skill is None:
        raise not_found(
            f"no skill named {name!r} here",
            name,
            skills.values_list("name", flat=True),
            narrow="call use_skill without a name to list the skills, or create one with create_skill",
        )
    if usable and not skill.is_usable():
        state = "was rejected: " + skill.rejection_reason if skill.status == CapabilityStatus.REJECTED else None
        raise HintException(
            "schema",
            f"skill {name!r} {state or 'is waiting for a staff member to approve its current files'}: "
            "ask a staff member to review it in the admin (Tools → Skills), or use another skill",
        )
    return skill


@requires_tenant(holdings.usable_skill)
@uniform_contract(name="use_skill", is_tabular=False)
def use_skill(inputs: dict, context: ToolContext) -> Ok:
    """No name: the approved skills, one line each. A name: its instructions and its files."""
    name = inputs.get("name")
    if not name:
        usable = skill_shelf.usable(Skill.objects.usable().filter(tenant_id=context.tenant_id))
        if not usable:
            return Ok(rows=0, data="No approved skills yet. create_skill writes one; a staff member approves it.")
        lines = [f"- {skill.name}: {skill.description}" for skill in usable]
        return Ok(rows=len(usable), data="Skills (use_skill with a name loads one):\n" + "\n".join(lines))
    skill = _find(context, name, usable=True)
    folder = skill.folder()
    manifest = folder.manifest
    files = [f"- {path} ({len(data):,} bytes)" for path, data in sorted(folder.files.items()) if path != MANIFEST]
    parts = [f"# Skill {manifest.name}", manifest.description, "", manifest.instructions]
    if files:
        parts += ["", "Files (run_skill_script runs a .py script; read_skill_asset reads a file):", *files]
    if manifest.allowed_tools:
        parts += ["", f"Tools its scripts may call: {', '.join(manifest.allowed_tools)}"]
    return Ok(rows=1, data="\n".join(parts))


def _manifest(inputs: dict, base: Manifest | None = None) -> Manifest:
    tools = inputs.get("allowed_tools")
    return Manifest(
        name=inputs["name"] if base is None else base.name,
        description=inputs.get("description") or (base.description if base else ""),
        instructions=inputs.get("instructions") or (base.instructions if base else ""),
        license=base.license if base else "",
        compatibility=base.compatibility if base else "",
        metadata=base.metadata if base else {},
        allowed_tools=tuple(tools) if tools is not None else (base.allowed_tools if base else ()),
    )


def _build(manifest: Manifest, files: dict[str, bytes]) -> SkillFolder:
    """The folder, or a schema hint naming the file or field and the rule it broke."""
    try:
        return SkillFolder({**files, MANIFEST: render_manifest(manifest).encode()})
    except SkillFormatError as exc:
        raise HintException("schema", f"{exc}; fix that field or file and call again") from None


def _text_files(files: dict[str, Any]) -> dict[str, bytes]:
    if MANIFEST in files:
        raise HintException("schema", f"files: {MANIFEST} is written from name, description and instructions")
    return {path: text.encode() for path, text in files.items() if text is not None}


@uniform_contract(name="create_skill", is_tabular=False)
def create_skill(inputs: dict, context: ToolContext) -> Ok:
    """Save a new skill of the caller's tenant, pending staff review."""
    folder = _build(_manifest(inputs), _text_files(inputs.get("files") or {}))
    try:
        skill = actions.create_skill(tenant_id=context.tenant_id, folder=folder, actor=_actor(context))
    except ValidationError as exc:
        raise HintException("schema", "name: " + "; ".join(exc.messages)) from None
    return Ok(
        rows=1,
        data=(
            f"Saved skill {skill.name} ({len(folder.files)} file(s), hash {skill.content_hash[:12]}). "
            "A staff member must approve it before use_skill or run_skill_script will use it."
        ),
    )


@requires_tenant(holdings.any_skill)
@uniform_contract(name="update_skill", is_tabular=False)
def update_skill(inputs: dict, context: ToolContext) -> Ok | Err:
    """Change a skill's description, instructions, allowed tools or files; it goes back to review.

    Only whoever created it, or staff: a change takes the skill out of use for the whole tenant.
    """
    skill = _find(context, inputs["name"], usable=False)
    if skill.created_by != _actor(context) and not may(context, EDIT_PERMISSION):
        return Err(
            f"skill {skill.name} was made by someone else: only they, staff or holders of {EDIT_PERMISSION} "
            "may change it (a change takes it out of use until it is approved again)",
            "PermissionDenied",
        )
    current = skill.folder()
    files = {path: data for path, data in current.files.items() if path != MANIFEST}
    for path, text in (inputs.get("files") or {}).items():
        if path == MANIFEST:
            raise HintException("schema", f"files: {MANIFEST} is written from description and instructions")
        if text is None and path not in files:
            raise not_found(f"files: {path!r} is not in the skill", path, files, narrow="use_skill lists its files")
        if text is None:
            del files[path]
        else:
            files[path] = text.encode()
    folder = _build(_manifest(inputs, current.manifest), files)
    updated = actions.update_skill(skill, folder=folder, actor=_actor(context))
    if updated.content_hash == skill.content_hash and updated.status == skill.status:
        return Ok(rows=0, data=f"Skill {skill.name} is unchanged: the files are the same.")
    return Ok(
        rows=1,
        data=(
            f"Updated skill {skill.name} (hash {updated.content_hash[:12]}); "
            "it waits for a staff member's approval again."
        ),
    )


def _file(folder: SkillFolder, path: str) -> bytes:
    try:
        path = check_path(path)
    except SkillFormatError as exc:
        raise HintException("schema", f"path: {exc}; give a path inside the skill, e.g. scripts/run.py") from None
    if path not in folder.files:
        raise not_found(
            f"path: the skill has no file {path!r}", path, folder.files, narrow="use_skill lists the skill's files"
        )
    return folder.files[path]


@requires(custom_tools_on)
@requires_tenant(holdings.usable_skill)
@uniform_contract(name="run_skill_script", is_tabular=False)
def run_skill_script(inputs: dict, context: ToolContext) -> Any:
    """Run an approved skill's Python script in the sandbox, as a custom tool's code runs."""
    skill = _find(context, inputs["name"], usable=True)
    folder = skill.folder()
    path = inputs["script"]
    if not path.endswith(".py"):
        raise HintException("schema", f"script: {path!r} is not a Python (.py) file; only Python scripts run here")
    try:
        code = _file(folder, path).decode("utf-8")
    except UnicodeDecodeError:
        raise HintException("schema", f"script: {path!r} is not UTF-8 text") from None
    outcome = service.run_code(
        code,
        inputs.get("args") or {},
        context,
        tool_name="run_skill_script",
        definition_hash=skill.approved_hash,
        dependencies=frozenset(folder.manifest.allowed_tools),
    )
    if not outcome.ok and outcome.stopped_by in ("language", "tool"):
        raise HintException("schema", f"the script failed: {outcome.error} [stopped by: {outcome.stopped_by}]")
    return service.outcome_to_return(outcome)


@requires_tenant(holdings.usable_skill)
@uniform_contract(name="read_skill_asset", is_tabular=False)
def read_skill_asset(inputs: dict, context: ToolContext) -> Ok:
    """Up to MAX_ASSET_CHARS of one file of an approved skill from ``offset`` (a binary file: its size)."""
    skill = _find(context, inputs["name"], usable=True)
    path = inputs["path"]
    data = _file(skill.folder(), path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Ok(rows=1, data=f"{path} is a binary file of {len(data):,} bytes; it has no text to show.")
    offset = inputs.get("offset", 0)
    part = text[offset : offset + MAX_ASSET_CHARS]
    rest = len(text) - offset - len(part)
    if rest > 0:
        part += f"\n[… {rest:,} more characters: read_skill_asset with offset {offset + len(part)}]"
    return Ok(rows=1, data=part)


TOOLS = (
    Tool(
        name="use_skill",
        description=(
            "Load one of this tenant's approved Agent Skill playbooks by name and follow it; "
            "without a name, list them and when each applies. Returns the skill's instructions and its "
            "bundled scripts and assets, which run_skill_script and read_skill_asset open."
        ),
        input_schema={
            "type": "object",
            "properties": {"name": {**SKILL_NAME, "description": "The skill to load; omit to list them."}},
            "additionalProperties": False,
        },
        handler=use_skill,
        category="skills",
        status_message="Loading the skill",
    ),
    Tool(
        name="create_skill",
        description=(
            "Save a new Agent Skill (a playbook, optionally with scripts/ and assets/) when the user "
            "wants a procedure kept and reused in later conversations. A staff member approves the skill "
            "before use_skill will load it."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {
                    **SKILL_NAME,
                    "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$",
                    "description": "Lower-case words joined by single hyphens, e.g. regional-sales-summary.",
                },
                "description": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1024,
                    "description": "What the skill does and when to use it.",
                },
                "instructions": {
                    "type": "string",
                    "minLength": 1,
                    "description": "What to do, naming the scripts and assets it uses.",
                },
                "files": FILES,
                "allowed_tools": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": 20,
                    "description": "Tools the skill's scripts may call with call_tool.",
                },
            },
            "required": ["name", "description", "instructions"],
            "additionalProperties": False,
        },
        handler=create_skill,
        category="skills",
        status_message="Saving the skill",
    ),
    Tool(
        name="update_skill",
        description=(
            "Revise an Agent Skill of this tenant: its description, instructions, allowed tools or "
            "bundled scripts and assets (null deletes one). The revised skill needs a staff approval again."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": SKILL_NAME,
                "description": {"type": "string", "minLength": 1, "maxLength": 1024},
                "instructions": {"type": "string", "minLength": 1},
                "files": FILES,
                "allowed_tools": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        handler=update_skill,
        category="skills",
        status_message="Updating the skill",
    ),
    Tool(
        name="run_skill_script",
        description=(
            "Run a Python script bundled with an approved Agent Skill, in the sandbox, when the skill's "
            "instructions say so. The script reads `inputs` (the args) and assigns `result`; it may call only "
            "the tools the skill allows."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": SKILL_NAME,
                "script": {"type": "string", "minLength": 1, "description": "Its path, e.g. scripts/summarise.py."},
                "args": {"type": "object", "description": "What the script reads as `inputs`."},
            },
            "required": ["name", "script"],
            "additionalProperties": False,
        },
        handler=run_skill_script,
        category="skills",
        status_message="Running the skill's script",
    ),
    Tool(
        name="read_skill_asset",
        description=(
            "Open an asset bundled with an approved Agent Skill (a template, reference notes, an example) "
            "that the skill's instructions name."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": SKILL_NAME,
                "path": {"type": "string", "minLength": 1, "description": "Its path, e.g. assets/template.md."},
                "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Where to start reading."},
            },
            "required": ["name", "path"],
            "additionalProperties": False,
        },
        handler=read_skill_asset,
        category="skills",
        status_message="Reading the skill's file",
    ),
)
