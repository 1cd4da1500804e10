"""Seeding: upsert the system tool catalog into tool_definitions.

Removal is explicit: only tools named in RETIRED_TOOLS are soft-deleted. A
live system row the running code does not know is reported, never deleted,
so a code/database skew can never turn into silent mass deletion.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from registry.models import ToolDefinition, ToolStatus, ToolType

logger = logging.getLogger("eunice.registry")

# Columns refreshed from the catalog on every seed. tool_type and status are
# never overwritten: an admin may have disabled or re-reviewed a tool.
REFRESHED = ("description", "input_schema", "category", "handler_path", "status_message", "large_output")


@dataclass
class SeedReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"created {len(self.created)}, updated {len(self.updated)}, "
            f"unchanged {len(self.unchanged)}, retired {len(self.retired)}, "
            f"unknown {len(self.unknown)}"
        )


@transaction.atomic
def seed_system_tools(tools: Iterable[dict], *, retired: Iterable[str] = (), known: Iterable[str] = ()) -> SeedReport:
    """Upsert ``tools`` and soft-delete live rows named in ``retired``.

    ``known`` names tools the code knows but does not seed now (turned off by a
    feature flag): their rows are left alone and not reported as unknown.
    """
    tools = list(tools)
    retired = frozenset(retired)
    report = SeedReport()
    rows = {row.name: row for row in ToolDefinition.objects.select_for_update()}
    for entry in tools:
        if entry["name"] in retired:
            continue
        _upsert(entry, rows.get(entry["name"]), report)
    now = timezone.now()
    for name in sorted(retired):
        row = rows.get(name)
        if row is not None and row.deleted_at is None and row.tool_type == ToolType.SYSTEM:
            row.deleted_at = now
            row.save(update_fields=["deleted_at"])
            report.retired.append(name)
    expected = {entry["name"] for entry in tools} | retired | set(known)
    for name, row in sorted(rows.items()):
        if row.tool_type == ToolType.SYSTEM and row.deleted_at is None and name not in expected:
            report.unknown.append(name)
    if report.unknown:
        logger.warning(
            "seeding: %d live system tool(s) are unknown to this code and were left alone: %s",
            len(report.unknown),
            ", ".join(report.unknown),
        )
    return report


def _upsert(entry: dict, row: ToolDefinition | None, report: SeedReport) -> None:
    name = entry["name"]
    fields = {key: entry.get(key, _default(key)) for key in REFRESHED}
    if row is None:
        ToolDefinition.objects.create(
            name=name,
            tool_type=ToolType.SYSTEM,
            status=ToolStatus.APPROVED,
            implementation=f"system:{name}",
            created_by="system",
            replaced_by_model_capability=entry.get("replaced_by_model_capability"),
            **fields,
        )
        report.created.append(name)
        return
    if row.tool_type != ToolType.SYSTEM:
        logger.error(
            "seeding: system tool %s collides with a %s tool of the same name; not seeded",
            name,
            row.tool_type,
        )
        report.conflicts.append(name)
        return
    changed = [key for key, value in fields.items() if getattr(row, key) != value]
    if row.deleted_at is not None:
        row.deleted_at = None  # un-retired: bring it back
        changed.append("deleted_at")
    if not changed:
        report.unchanged.append(name)
        return
    for key in changed:
        if key != "deleted_at":
            setattr(row, key, fields[key])
    if "description" in changed:
        # A stale vector would keep matching the old text until re-indexed.
        row.embedding = None
        row.embedding_model = ""
        changed += ["embedding", "embedding_model"]
    row.version += 1
    row.save(update_fields=[*changed, "version"])
    report.updated.append(name)


def _default(key: str) -> object:
    return False if key == "large_output" else ""


def seed_catalog() -> SeedReport:
    """Seed this deployment's catalog (feature flags applied)."""
    from registry.system import system_catalog

    catalog = system_catalog()
    return seed_system_tools(
        catalog.entries(),
        retired=catalog.retired(),
        known=[entry["name"] for entry in catalog.all_entries()],
    )
