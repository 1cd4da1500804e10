"""The tool surface: which tools one model call is offered, and why each is there.

The catalog is everything the platform can run; a call sees only a composed
part of it: the resident floor, the conversation's working set (tools paged in
by ``search_tools``, sticky for the conversation) and the mode's rules. The
rest stays reachable through ``search_tools``.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from llm.capabilities import NATIVE
from llm.models import ModelConfig
from registry.installed import Port
from registry.models import ToolDefinition
from registry.ports import WorkingSet
from registry.surface_floor import resolve_floor_names

if TYPE_CHECKING:
    from registry.registry import ToolRegistry

logger = logging.getLogger("eunice.registry")

# Held below the 128-tool cap some providers enforce.
MAX_TOOL_SURFACE = 120


class Mode(StrEnum):
    """How a conversation's loop runs; the values of Conversation.Mode."""

    CHAT = "chat"
    AGENTIC = "agentic"  # the project-manager loop, with its own allowlist
    DELEGATE = "delegate"  # a sub-agent working on a delegated task


MODES = tuple(Mode)

# Tools only the agentic (project-manager) loop may use.
AGENTIC_ONLY = frozenset({"plan"})
# Tools a delegated sub-agent may not use (none today).
DELEGATE_EXCLUDED: frozenset[str] = frozenset()
# The agentic loop's fixed allowlist; deliberately not intersected with the
# floor, so agentic mode never silently loses ground against chat mode.
PM_ALLOWED: tuple[str, ...] = (
    "plan",
    "delegate",
    "delegate_batch",
    "describe_entry",
    "search_catalog",
    "analyze_data",
    "preview_data",
    "display_map",
    "generate_document",
    "document_conversation",
    "export",
    "export_excel",
    "search_tools",
)

CAPABILITY_CACHE_SECONDS = 30.0

# What each provider can actually deliver natively, as wired in our request
# layer (llm/capabilities.py). A capability a model row claims but its provider
# cannot deliver never removes a tool: both must hold.
PROVIDER_NATIVE_CAPABILITIES = NATIVE


@dataclass(frozen=True, slots=True)
class SurfaceEntry:
    name: str
    reason: str  # anchor | usage | system | static_fallback | mode_allowlist | working_set


class _Replacements:
    """``{tool name: capability}`` for tools a model capability can replace, cached."""

    def __init__(self) -> None:
        self._value: dict[str, str] | None = None
        self._at = float("-inf")
        self._lock = threading.Lock()

    def get(self) -> dict[str, str]:
        now = time.monotonic()
        if self._value is None or now - self._at > CAPABILITY_CACHE_SECONDS:
            with self._lock:
                self._value = dict(
                    ToolDefinition.objects.live()
                    .exclude(replaced_by_model_capability__isnull=True)
                    .exclude(replaced_by_model_capability="")
                    .values_list("name", "replaced_by_model_capability")
                )
                self._at = now
        return self._value

    def clear(self) -> None:
        self._value = None


_replacements = _Replacements()


def capability_replacements() -> dict[str, str]:
    return _replacements.get()


def clear_capability_cache() -> None:
    _replacements.clear()


def active_capabilities(model: ModelConfig | None) -> frozenset[str]:
    """Capabilities the model claims AND its provider can deliver."""
    return frozenset() if model is None else model.active_capabilities


def permitted_capabilities(registry: ToolRegistry, tenant_id: str, model: ModelConfig | None) -> frozenset[str]:
    """The model's active capabilities that the tenant may use: a native capability
    stands in for a tool, and has none of its gates (the provider runs it unasked),
    so it is off where that tool is not the tenant's to use freely: hidden from the
    tenant, disabled, held for a person's approval by an approval rule, or named by a
    policy rule of the tenant's (which the provider could not be held to)."""
    capabilities = active_capabilities(model)
    if not capabilities:
        return capabilities
    from registry import approval_rules
    from registry.gate import tenant_policy

    definitions = registry.definitions()
    policy = tenant_policy.installed()
    withheld = {
        capability
        for name, capability in capability_replacements().items()
        if capability in capabilities
        and (
            name not in definitions
            or not definitions[name].visible_to(tenant_id)
            or approval_rules.rule_for(registry, name, tenant_id) is not None
            or (policy is not None and policy.rules_tool(name, tenant_id))
        )
    }
    return capabilities - withheld


working_sets: Port[WorkingSet] = Port("working-set store", "conversations")


def working_set_names(conversation_id: str | None, namespace_id: str = "") -> list[str]:
    if not conversation_id:
        return []
    return working_sets.get().names(conversation_id, namespace_id)


def resident_entries(mode: str) -> list[SurfaceEntry]:
    """The mode's resident component, before the working set is added."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if mode == Mode.AGENTIC:
        return [SurfaceEntry(name, "mode_allowlist") for name in PM_ALLOWED]
    excluded = AGENTIC_ONLY | (DELEGATE_EXCLUDED if mode == Mode.DELEGATE else frozenset())
    return [SurfaceEntry(n, r) for n, r in resolve_floor_names() if n not in excluded]


@dataclass(frozen=True, slots=True)
class Surface:
    """A composed surface: the entries offered, and the working-set tools cut to fit the cap."""

    entries: list[SurfaceEntry]
    cut: list[str]
    #: The model's native capabilities the surface gave way to (``permitted_capabilities``):
    #: the request offers exactly these, so surface and request never disagree.
    capabilities: frozenset[str] = frozenset()
    #: The working set it was composed from (every paged-in name, offered or not).
    working_set: frozenset[str] = frozenset()


def compose(registry: ToolRegistry, tenant_id: str, **kwargs) -> list[SurfaceEntry]:
    """The tools offered to one call, in order, each with why it is there (see ``compose_surface``)."""
    return compose_surface(registry, tenant_id, **kwargs).entries


def compose_surface(
    registry: ToolRegistry,
    tenant_id: str,
    *,
    mode: str = "chat",
    conversation_id: str | None = None,
    namespace_id: str = "",
    model: ModelConfig | None = None,
    working_set: list[str] | None = None,
) -> Surface:
    """The tools offered to one call, and what had to be cut to hold MAX_TOOL_SURFACE.

    ``working_set`` is the conversation's paged-in tool names, least recently
    used first, when the caller has already read them (else they are read here).
    Raises ValueError for an unknown mode, never for size: ``page_in`` keeps
    the working set small enough for every mode, and a surface that is still
    too large (a floor grown since, a huge floor) keeps its resident part and
    the most recently used working-set tools, and says what it cut.
    """
    definitions = registry.definitions()
    capabilities = permitted_capabilities(registry, tenant_id, model)
    dropped = _capability_dropped(capabilities)
    resident: list[SurfaceEntry] = []
    paged: list[SurfaceEntry] = []
    seen: set[str] = set()
    excluded = AGENTIC_ONLY if mode != "agentic" else frozenset()
    if working_set is None:
        working_set = working_set_names(conversation_id, namespace_id)
    candidates = [*resident_entries(mode), *(SurfaceEntry(name, "working_set") for name in working_set)]
    for entry in candidates:
        if entry.name in seen:
            continue
        if entry.reason == "working_set" and entry.name in excluded:
            continue
        if not _offered(registry, definitions, entry.name, tenant_id):
            _skip_once(entry.name)
            continue
        # Only resident tools give way to a native capability: a tool the
        # model paged in itself is a signal it wants that very tool.
        if entry.reason != "working_set" and entry.name in dropped:
            continue
        seen.add(entry.name)
        (paged if entry.reason == "working_set" else resident).append(entry)
    if len(resident) + len(paged) <= MAX_TOOL_SURFACE:
        return Surface([*resident, *paged], [], capabilities, frozenset(working_set))
    room = max(0, MAX_TOOL_SURFACE - len(resident))
    kept = paged[len(paged) - room :] if room else []
    cut = [e.name for e in resident[MAX_TOOL_SURFACE:]] + [e.name for e in paged[: len(paged) - room]]
    logger.warning(
        "tool surface (mode %s, conversation %s) has %d tools, over the cap of %d; cut %d: %s",
        mode,
        conversation_id,
        len(resident) + len(paged),
        MAX_TOOL_SURFACE,
        len(cut),
        ", ".join(cut),
    )
    return Surface([*resident[:MAX_TOOL_SURFACE], *kept], cut, capabilities, frozenset(working_set))


def assemble_tools(registry: ToolRegistry, tenant_id: str, **kwargs) -> list[dict]:
    """The tool array for the provider: schemas of ``compose(...)``'s entries."""
    definitions = registry.definitions()
    return [
        {
            "name": entry.name,
            "description": definitions[entry.name].description,
            "input_schema": definitions[entry.name].llm_schema,
        }
        for entry in compose(registry, tenant_id, **kwargs)
    ]


def surface_event(surface: Surface) -> dict:
    """The ``tools`` part of an llm_request telemetry event: every tool with its reason,
    and (as ``tools_cut``) the tools cut to hold the cap, when there were any."""
    event: dict = {"tools": [{"name": e.name, "reason": e.reason} for e in surface.entries]}
    if surface.cut:
        event["tools_cut"] = surface.cut
    return event


def _capability_dropped(capabilities: frozenset[str]) -> set[str]:
    if not capabilities:
        return set()
    return {name for name, cap in capability_replacements().items() if cap in capabilities}


_skipped: set[str] = set()


def _skip_once(name: str) -> None:
    # A floor or allowlist name the registry does not (yet) have is skipped,
    # never sent to the provider; say so once per process, not per call.
    if name not in _skipped:
        _skipped.add(name)
        logger.info("tool surface: %s is not in the live registry; skipped", name)


@dataclass(frozen=True, slots=True)
class PageResult:
    added: list[str]
    already: list[str]
    over_budget: list[str]
    evicted: list[str]


def page_in(
    registry: ToolRegistry,
    tenant_id: str,
    names: list[str],
    *,
    conversation_id: str,
    namespace_id: str = "",
    query: str = "",
) -> PageResult:
    """Add tools to the conversation's working set, within the surface budget.

    This is where MAX_TOOL_SURFACE is enforced, for every mode at once: the
    working set must fit beside the union of every mode's resident tools (the
    floor and the agentic allowlist), since one conversation may be composed in
    any mode. Room is made by evicting the least recently used working-set
    tools (reported in ``evicted``); tools found again count as used. Only
    tools that would not fit even in an empty working set are ``over_budget``.
    """
    store = working_sets.get()
    current = working_set_names(conversation_id, namespace_id)
    resident = _resident_everywhere(registry, tenant_id)
    definitions = registry.definitions()
    counted = [n for n in current if n not in resident and _offered(registry, definitions, n, tenant_id)]
    room = MAX_TOOL_SURFACE - len(resident)
    added: list[str] = []
    already: list[str] = []
    over: list[str] = []
    for name in names:
        if name in resident or name in current:
            already.append(name)
        elif len(added) >= room:
            over.append(name)
        else:
            added.append(name)
    wanted = set(names)
    # Least recently used first; the tools just found again are used now.
    order = [n for n in counted if n not in wanted] + [n for n in counted if n in wanted]
    excess = len(order) + len(added) - room
    evicted = order[:excess] if excess > 0 else []
    if evicted:
        store.evict(conversation_id, namespace_id, evicted)
    store.touch(conversation_id, namespace_id, [n for n in already if n in current])
    if added:
        store.add(conversation_id, namespace_id, added, query)
    return PageResult(added, already, over, evicted)


def touch_used(conversation_id: str | None, namespace_id: str, names: list[str]) -> None:
    """Mark tools the model has just called as used, so they are evicted last."""
    if conversation_id and names:
        working_sets.get().touch(conversation_id, namespace_id, names)


def _resident_everywhere(registry: ToolRegistry, tenant_id: str) -> set[str]:
    """Every tool some mode offers whatever the working set holds."""
    return {e.name for mode in MODES for e in compose(registry, tenant_id, mode=mode, working_set=[])}


def _offered(registry: ToolRegistry, definitions: dict, name: str, tenant_id: str) -> bool:
    """Visible to the tenant and able to run (registry.availability): a tool that cannot work is not offered."""
    definition = definitions.get(name)
    return definition is not None and registry.offered_to(definition, tenant_id)
