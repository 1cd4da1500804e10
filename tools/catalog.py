"""The system tool catalog: every tool the platform knows how to run.

Schemas live in per-category modules under ``tools/schemas``; ``TOOL_ORDER`` is
the one source of truth for the order tools are registered and offered in.
``assemble`` cross-checks the two in both directions at import time, so a tool
can never silently drop out of (or never make it into) the catalog.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from tools.schemas import agent, builder, data, datasources, documents, entity, mcp, outputs, search, utility, web

REQUIRED_KEYS = ("name", "description", "input_schema", "category", "handler_path")
OPTIONAL_KEYS = (
    "status_message",
    "large_output",
    "inline",
    "timeout_seconds",
    "replaced_by_model_capability",
    "sequential",
)

TOOL_ORDER: tuple[str, ...] = (
    "search_tools",
    "plan",
    "call_llm",
    "delegate",
    "delegate_batch",
    "request_user_input",
    "search_mcp_marketplace",
    "install_mcp_server",
    "preview_data",
    "describe_entry",
    "present_rows",
    "query",
    "query_frames",
    "analyze_data",
    "register_datasource",
    "set_datasource_auth",
    "query_datasource",
    "create_chart",
    "display_map",
    "export",
    "export_excel",
    "manipulate_excel",
    "query_telemetry",
    "create_corpus",
    "index_content",
    "get_document_text",
    "move_documents",
    "search_documents",
    "record_fact",
    "get_entity",
    "list_entities",
    "link_entities",
    "recall_entities",
    "ingest_entities",
    "define_entity_projection",
    "generate_document",
    "document_conversation",
    "fetch_url",
    "web_search",
    "build_custom_tool",
    "tool_job_status",
)

# Category modules, each exporting TOOLS: a list of schema entries.
CATEGORIES = (utility, agent, mcp, data, datasources, outputs, search, entity, documents, web, builder)

# The only system tools sandboxed code (custom tools, analyze_data) may reach through
# call_tool, and then only those a custom tool declares: tools that read or present
# data. Nothing that starts processes or sub-agents, reaches the network, registers data
# sources, installs MCP servers, builds tools or changes configuration; a tool added to
# the catalog is not callable from the sandbox until it is listed here.
SANDBOX_CALLABLE: frozenset[str] = frozenset({
    "search_tools", "preview_data", "describe_entry", "present_rows", "query", "query_frames",
    "analyze_data", "query_datasource", "create_chart", "display_map", "export", "export_excel",
    "get_document_text", "search_documents", "record_fact", "get_entity", "list_entities",
    "link_entities", "recall_entities",
})

# Tools named here are soft-deleted by seeding; nothing else ever is.
RETIRED_TOOLS: frozenset[str] = frozenset()

# Tool name -> the feature flag (settings.FEATURE_FLAGS) that must be on for it.
FLAG_GATED: Mapping[str, str] = MappingProxyType({})


def assemble(categories: Iterable[Iterable[dict]], order: tuple[str, ...]) -> list[dict]:
    """Return the category entries in ``order``.

    Raises KeyError naming the tool when an entry lacks a required key or has
    an unknown one, a name is declared twice, a name in ``order`` has no entry,
    or an entry is missing from ``order``.
    """
    by_name: dict[str, dict] = {}
    for entries in categories:
        for entry in entries:
            name = entry.get("name")
            if not name:
                raise KeyError(f"catalog entry without a name: {sorted(entry)}")
            _check_keys(name, entry)
            if name in by_name:
                raise KeyError(f"tool {name!r} is declared twice in the catalog")
            by_name[name] = entry
    repeated = [name for name, count in Counter(order).items() if count > 1]
    if repeated:
        raise KeyError(f"tool {repeated[0]!r} appears twice in TOOL_ORDER")
    missing = [name for name in order if name not in by_name]
    if missing:
        raise KeyError(f"tool {missing[0]!r} is in TOOL_ORDER but no category declares it")
    ordered = set(order)
    unordered = [name for name in by_name if name not in ordered]
    if unordered:
        raise KeyError(f"tool {unordered[0]!r} is declared in a category but missing from TOOL_ORDER")
    return [by_name[name] for name in order]


def _check_keys(name: str, entry: dict) -> None:
    for key in REQUIRED_KEYS:
        if key not in entry:
            raise KeyError(f"tool {name!r} is missing the required key {key!r}")
    unknown = set(entry) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS)
    if unknown:
        raise KeyError(f"tool {name!r} has unknown keys {sorted(unknown)}")
    if not isinstance(entry["input_schema"], dict) or entry["input_schema"].get("type") != "object":
        raise KeyError(f"tool {name!r} needs an input_schema of type 'object'")


def apply_feature_flags(
    tools: list[dict], flags: Mapping[str, bool], gated: Mapping[str, str] = FLAG_GATED
) -> list[dict]:
    """Drop tools whose gating flag is off. Raises KeyError for an undefined flag."""
    kept = []
    for entry in tools:
        flag = gated.get(entry["name"])
        if flag is None:
            kept.append(entry)
            continue
        if flag not in flags:
            raise KeyError(f"tool {entry['name']!r} is gated by unknown feature flag {flag!r}")
        if flags[flag]:
            kept.append(entry)
    return kept


ALL_SYSTEM_TOOLS: tuple[dict, ...] = tuple(assemble([c.TOOLS for c in CATEGORIES], TOOL_ORDER))
if not SANDBOX_CALLABLE <= set(TOOL_ORDER):
    raise KeyError(f"SANDBOX_CALLABLE names unknown tools {sorted(SANDBOX_CALLABLE - set(TOOL_ORDER))}")


def system_tools() -> list[dict]:
    """The catalog with this deployment's feature flags applied."""
    from django.conf import settings

    return apply_feature_flags(list(ALL_SYSTEM_TOOLS), settings.FEATURE_FLAGS)


def tools_without_contract_spec(entries: Iterable[dict]) -> set[str]:
    """Names among ``entries`` whose handler module registers no contract spec.

    Imports each handler module (that is where specs are registered). Raises
    ImportError for a handler path that does not resolve.
    """
    from registry.contract import registered_names
    from registry.handlers import import_handler

    entries = list(entries)
    for entry in entries:
        import_handler(entry["handler_path"])
    return {entry["name"] for entry in entries} - registered_names()
