"""Where a tool result's side channels go: files, datasets, cards and cost."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from conversations.models import Notification
from datacatalog.models import GeneratedFile
from eunice.tenant_files import is_tenant_file
from registry.cards import CardType
from registry.result import ToolResult

if TYPE_CHECKING:
    from conversations.runtime import Runtime

logger = logging.getLogger("eunice.conversations")

SINGLETON_CARDS = frozenset({CardType.CITED_ANSWER, CardType.MAP_DISPLAY})


def route_side_effects(tool_name: str, result: ToolResult, runtime: Runtime) -> list[dict]:
    """Files, datasets, cards and cost of one result to where they belong; returns the
    chunks to show the user once the result itself is shown (its cards, its datasets)."""
    shown: list[dict] = []
    file_ids = {}
    for filename, export in result.exports.items():
        generated = register_export(tool_name, filename, export, runtime)
        if generated is not None:
            file_ids[filename] = generated.pk
    for name, dataset in result.datasets.items():
        # Promoted into the conversation's namespace for later tools to load by name.
        runtime.datasets[name] = dataset
        runtime.catalog.promote(name, dataset, source_tool=tool_name)
        runtime.recorder.record("progress", {"dataset": name, "source_tool": tool_name})
        shown.append(
            {"type": "progress", "source_tool": tool_name, "dataset": name, "message": f"dataset {name} is ready"}
        )
    refused = set(result.exports) - set(file_ids)
    for card in result.cards:
        if card.get("type") == CardType.FILE_DOWNLOAD and card.get("export") in refused:
            continue  # no button to a download that is not there
        if card.get("type") == CardType.FILE_DOWNLOAD and card.get("export") in file_ids:
            # The row exists only now: the card learns which file its button downloads.
            card = {**card, "file_id": file_ids[card["export"]]}
        runtime.cards.append(card)
        runtime.recorder.record("card", {"source_tool": tool_name, "card": card})
        shown.append({"type": "card", "source_tool": tool_name, "card": card})
    if result.cost:
        from registry.contract import spec_for

        runtime.cost.add(tool_name, result.cost)
        spec = spec_for(tool_name)
        if spec is not None and spec.is_cost_rollup:
            # A roll-up (delegate) reports what its leaf calls cost; those calls
            # already wrote their own usage rows and moved the budget.
            return shown
        runtime.budget.spend(result.cost)  # its usage row: written by the registry (registry.usage)
    return shown


def register_export(tool_name: str, filename: str, export: dict, runtime: Runtime) -> GeneratedFile | None:
    """Record a file a tool produced, tell the user, and note it in telemetry;
    None (logged) when the export names a file outside the tenant's directories.

    A tool that wrote its file through the catalog (``file_id`` in the export)
    already has its row; it is reused, never duplicated.
    """
    generated = _existing_file(export, runtime.tenant_id)
    if generated is None and not is_tenant_file(runtime.tenant_id, str(export.get("path", ""))):
        logger.warning(
            "tool %s exported %r from outside tenant %s's files; not offered for download",
            tool_name,
            filename,
            runtime.tenant_id,
        )
        return None
    generated = generated or GeneratedFile.objects.create(
        tenant_id=runtime.tenant_id,
        conversation=runtime.conversation,
        filename=export.get("original_filename") or filename,
        path=str(export.get("path", "")),
        mime_type=export.get("mime_type", ""),
        size_bytes=int(export.get("size_bytes") or 0),
        source_tool=tool_name,
    )
    payload = {"file_id": generated.pk, "filename": generated.filename, "source_tool": tool_name}
    runtime.recorder.record("export", payload)
    Notification.objects.create(tenant_id=runtime.tenant_id, user=runtime.user, kind="export.ready", payload=payload)
    return generated


def _existing_file(export: dict, tenant_id: str) -> GeneratedFile | None:
    file_id = export.get("file_id")
    if not file_id:
        return None
    return GeneratedFile.objects.filter(pk=file_id, tenant_id=tenant_id).first()


def merge_cards(cards: list[dict]) -> list[dict]:
    """End-of-response cards: one per singleton type, map_display cards merged by display_id."""
    merged: list[dict] = []
    maps: dict[str, dict] = {}
    for card in cards:
        kind = card.get("type")
        if kind == CardType.MAP_DISPLAY:
            key = str(card.get("display_id", ""))
            if key in maps:
                _merge_map(maps[key], card)
                continue
            maps[key] = {**card}
            merged.append(maps[key])
        elif kind in SINGLETON_CARDS:
            merged = [c for c in merged if c.get("type") != kind] + [card]  # the latest wins
        else:
            merged.append(card)
    return merged


def _merge_map(into: dict, card: dict) -> None:
    for key in ("sources", "layers"):
        into[key] = [*into.get(key, []), *(item for item in card.get(key, []) if item not in into.get(key, []))]
    if card.get("bounds"):
        into["bounds"] = _union_bounds(into.get("bounds"), card["bounds"])
    if card.get("legend"):
        into["legend"] = {**into.get("legend", {}), **card["legend"]}


def _union_bounds(a: list | None, b: list) -> list:
    """[[south, west], [north, east]] covering both."""
    if not a:
        return b
    return [[min(a[0][0], b[0][0]), min(a[0][1], b[0][1])], [max(a[1][0], b[1][0]), max(a[1][1], b[1][1])]]
