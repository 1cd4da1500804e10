"""The system tool catalog: every tool the platform knows how to run.

Each tool is declared once, next to its handler, in its module's ``TOOLS``
(see ``registry.declarations.Tool`` and docs/tools.md). ``TOOL_ORDER`` is the
one source of truth for the order tools are registered and offered in;
``assemble`` cross-checks the declarations and the order in both directions
when the catalog is first composed, so a tool can never silently drop out of
(or never make it into) the catalog.
"""

from __future__ import annotations

import functools
import importlib
from collections import Counter
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from registry.declarations import DeclarationError, Tool
from registry.handlers import HandlerImportError, import_handler

# The modules whose ``TOOLS`` make up the catalog.
TOOL_MODULES: tuple[str, ...] = (
    "tools.utility",
    "tools.agent",
    "tools.mcp",
    "tools.data",
    "tools.catalog_search",
    "tools.sql",
    "tools.analysis",
    "tools.kits",
    "tools.cooccurrence",
    "tools.clusters",
    "tools.predict",
    "tools.programs",
    "tools.datasources",
    "tools.charts",
    "tools.spatial",
    "tools.places",
    "tools.exports",
    "tools.telemetry",
    "tools.corpora",
    "tools.entities",
    "tools.entity_tables",
    "tools.documents",
    "tools.web",
    "tools.builder",
    "tools.observations",
    "tools.convene",
    "tools.self_code",
    "tools.skills",
    "tools.primitives",
    "tools.insight",
)

TOOL_ORDER: tuple[str, ...] = (
    "search_tools",
    "plan",
    "call_llm",
    "delegate",
    "delegate_batch",
    "convene",
    "request_user_input",
    "create_observation",
    "search_mcp_marketplace",
    "install_mcp_server",
    "read_mcp_resource",
    "preview_data",
    "describe_entry",
    "search_catalog",
    "present_rows",
    "query",
    "query_frames",
    "analyze_data",
    "build_co_occurrence",
    "discover_clusters",
    "train_model",
    "get_model_info",
    "predict",
    "explain_prediction",
    "list_trained_models",
    "find_model",
    "create_kit",
    "search_kits",
    "run_program",
    "register_datasource",
    "set_datasource_auth",
    "query_datasource",
    "create_chart",
    "display_map",
    "spatial_join",
    "spatial_overlay",
    "buffer",
    "spatial_filter",
    "save_map",
    "geocode",
    "export",
    "export_excel",
    "manipulate_excel",
    "query_telemetry",
    "load_telemetry",
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
    "classify_document",
    "extract_document",
    "process_document",
    "create_schema",
    "create_taxonomy",
    "search_self_code",
    "fetch_url",
    "web_search",
    "build_custom_tool",
    "tool_job_status",
    "use_skill",
    "read_skill_asset",
    "run_skill_script",
    "create_skill",
    "update_skill",
    "create_primitive",
    "validate_primitive",
    "call_primitive",
)

# The only system tools sandboxed code (custom tools, analyze_data) may reach through
# call_tool, and then only those a custom tool declares: tools that read or present
# data. Nothing that starts processes or sub-agents, reaches the network, registers data
# sources, installs MCP servers, builds tools or changes configuration; a tool added to
# the catalog is not callable from the sandbox until it is listed here.
SANDBOX_CALLABLE: frozenset[str] = frozenset(
    {
        "search_tools",
        "preview_data",
        "describe_entry",
        "search_catalog",
        "present_rows",
        "query",
        "query_frames",
        "analyze_data",
        "query_datasource",
        "create_chart",
        "display_map",
        "export",
        "export_excel",
        "get_document_text",
        "search_documents",
        "record_fact",
        "get_entity",
        "list_entities",
        "link_entities",
        "recall_entities",
        "call_primitive",
    }
)

# Tools named here are soft-deleted by seeding; nothing else ever is.
RETIRED_TOOLS: frozenset[str] = frozenset()

# Tool name -> the feature flag (settings.FEATURE_FLAGS) that must be on for it.
FLAG_GATED: Mapping[str, str] = MappingProxyType(
    {
        "query_frames": "frames_sql_enabled",
        "query": "unified_query_enabled",
    }
)


def assemble(declarations: Iterable[Iterable[Tool]], order: tuple[str, ...]) -> list[Tool]:
    """Return the declared tools in ``order``.

    Raises DeclarationError naming the tool when a name is declared twice, a
    name in ``order`` has no declaration, a declaration is missing from
    ``order``, a name appears twice in ``order``, or a handler is not what its
    dotted path imports.
    """
    by_name: dict[str, Tool] = {}
    for tools in declarations:
        for tool in tools:
            if tool.name in by_name:
                raise DeclarationError(f"tool {tool.name!r} is declared twice in the catalog")
            by_name[tool.name] = tool
    repeated = [name for name, count in Counter(order).items() if count > 1]
    if repeated:
        raise DeclarationError(f"tool {repeated[0]!r} appears twice in TOOL_ORDER")
    missing = [name for name in order if name not in by_name]
    if missing:
        raise DeclarationError(f"tool {missing[0]!r} is in TOOL_ORDER but no module in TOOL_MODULES declares it")
    ordered = set(order)
    unordered = [name for name in by_name if name not in ordered]
    if unordered:
        raise DeclarationError(f"tool {unordered[0]!r} is declared but missing from TOOL_ORDER")
    for tool in by_name.values():
        _check_handler(tool)
    return [by_name[name] for name in order]


def _check_handler(tool: Tool) -> None:
    try:
        resolved = import_handler(tool.handler_path)
    except HandlerImportError as exc:
        raise DeclarationError(f"tool {tool.name!r}: its handler does not import: {exc}") from exc
    if resolved is not tool.handler:
        raise DeclarationError(f"tool {tool.name!r}: {tool.handler_path} is not the handler it declares")


def module_declarations(module_names: Iterable[str]) -> list[tuple[Tool, ...]]:
    """Import each module and return its ``TOOLS``.

    Raises DeclarationError naming the module when it does not import or has
    no ``TOOLS`` tuple of Tool: without its declarations the catalog cannot be
    composed, so the failure is reported once (system check eunice.E002), not
    as tools that silently vanish.
    """
    found = []
    for module_name in module_names:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise DeclarationError(f"{module_name} is in TOOL_MODULES but does not import: {exc}") from exc
        tools = getattr(module, "TOOLS", None)
        if not isinstance(tools, tuple) or not all(isinstance(tool, Tool) for tool in tools):
            raise DeclarationError(f"{module_name} is in TOOL_MODULES but has no TOOLS tuple of Tool")
        found.append(tools)
    return found


@functools.cache
def declared_tools() -> tuple[Tool, ...]:
    """Every system tool, in TOOL_ORDER; composed (and checked) on first use."""
    return tuple(assemble(module_declarations(TOOL_MODULES), TOOL_ORDER))


@functools.cache
def all_system_tools() -> tuple[dict, ...]:
    """The catalog entries of every system tool, feature flags not applied."""
    return tuple(tool.entry() for tool in declared_tools())


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


if not SANDBOX_CALLABLE <= set(TOOL_ORDER):
    raise KeyError(f"SANDBOX_CALLABLE names unknown tools {sorted(SANDBOX_CALLABLE - set(TOOL_ORDER))}")


def system_tools() -> list[dict]:
    """The catalog with this deployment's feature flags applied."""
    from django.conf import settings

    return apply_feature_flags(list(all_system_tools()), settings.FEATURE_FLAGS)


def tools_without_contract_spec(entries: Iterable[dict]) -> set[str]:
    """Names among ``entries`` whose handler module registers no contract spec.

    Imports each handler module (that is where specs are registered). Raises
    ImportError for a handler path that does not resolve.
    """
    from registry.contract import registered_names

    entries = list(entries)
    for entry in entries:
        import_handler(entry["handler_path"])
    return {entry["name"] for entry in entries} - registered_names()
