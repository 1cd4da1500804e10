"""Whether a tool can work here and now, and why not: one check for every kind of tool.

A tool that cannot work is never offered: ``registry.surface`` leaves it off
the model's tool array, ``search_tools`` does not find it, and a call of it
anyway is answered with a Hint saying why (``ToolRegistry.execute_tool``);
``manage.py list_tools`` shows the reason beside each such tool. The rules
are a table by kind of tool; each says why a tool of its kind cannot run, or
None when it can:

* system: its handler was imported and registered (not turned off by a
  feature flag, not failing to import), and what it needs is configured — a
  handler declares that with ``@requires(check)`` next to itself
  (``web_search`` needs a search backend; ``create_primitive``, which runs code
  in the sandbox, needs custom tools on: ``custom_tools_on``); and, asked for one tenant, what the
  tool acts on is there — ``@requires_tenant(check)`` (``use_skill`` needs an
  approved skill of the tenant's, ``call_primitive`` an approved primitive);
* MCP: its server offers it (a tool that needs a client feature Eunice lacks
  is held by ``registry.mcp.inventory`` and said unsupported); a server this
  process has not connected, or that disconnected, is connected by the call;
* custom: custom tools are on, and the definition is the one approved.

The tenant's part is asked wherever a tool is offered to a tenant
(``ToolRegistry.offered_to``: the surface, ``search_tools``, the MCP endpoint's
list, ``list_tools --tenant``) and on every call of such a tool, which is
therefore never ``settled``. Its checks answer from a per-tenant cache that the
app declaring them forgets when what the tenant holds changes, here and in the
other processes (``tools.holdings``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from django.conf import settings

from registry.models import ToolStatus, ToolType

if TYPE_CHECKING:
    from registry.handlers import Handler
    from registry.registry import ToolRegistry
    from registry.snapshot import Definition

Rule = Callable[["ToolRegistry", "Definition", "str | None"], "str | None"]  # (registry, definition, tenant)


def _system(registry: ToolRegistry, definition: Definition, tenant_id: str | None) -> str | None:
    handler = registry.handler(definition.name)
    if handler is None:
        return registry.known_reason(definition.name) or "it has no registered handler"
    why_not = handler.requires() if handler.requires is not None else None
    if why_not is None and tenant_id is not None and handler.requires_tenant is not None:
        return handler.requires_tenant(tenant_id)
    return why_not


def _mcp(registry: ToolRegistry, definition: Definition, tenant_id: str | None) -> str | None:
    # An approved row is one its server offers (held tools are not approved); a server
    # not connected in this process, or disconnected, is connected by the call itself.
    return None


def custom_tools_on() -> str | None:
    """Why code written by users or the builder cannot run here (None when it can): custom
    tools are off (``EUNICE_CUSTOM_TOOLS``). Every custom tool needs it, and so does every
    system tool that runs such code in the sandbox or builds it (``@requires``)."""
    if not settings.FEATURE_FLAGS["custom_tools_enabled"]:
        return "custom tools are not enabled in this deployment (EUNICE_CUSTOM_TOOLS)"
    return None


def _custom(registry: ToolRegistry, definition: Definition, tenant_id: str | None) -> str | None:
    why_not = custom_tools_on()
    if why_not is not None:
        return why_not
    if not definition.approved_hash or definition.current_hash != definition.approved_hash:
        # Checked here too, not only in save(): a bulk update bypasses save().
        return "its definition changed since it was approved and awaits review"
    return None


RULES: dict[str, Rule] = {ToolType.SYSTEM: _system, ToolType.MCP: _mcp, ToolType.CUSTOM: _custom}


def why_unavailable(registry: ToolRegistry, definition: Definition, tenant_id: str | None = None) -> str | None:
    """Why ``definition``'s tool cannot run now (None when it can): in this deployment,
    and with ``tenant_id`` for that tenant too (what it holds)."""
    if definition.status != ToolStatus.APPROVED:
        held = (
            f": {definition.status_message}"
            if definition.tool_type == ToolType.MCP and definition.status_message
            else ""
        )
        return f"it is not approved (status {definition.status}){held}"
    if not definition.enabled:
        return "it is disabled"
    rule = RULES.get(definition.tool_type)
    if rule is None:
        return f"tools of type {definition.tool_type!r} cannot run"
    return rule(registry, definition, tenant_id)


def settled(definition: Definition, handler: Handler | None) -> bool:
    """Whether ``why_unavailable`` says None, and will for as long as the tool's definition
    and its registered ``handler`` stay these very objects: an approved, enabled MCP tool,
    or a system tool with a handler that declares no requirement. The registry then skips
    asking on each call (``ToolRegistry._plan``); a requirement (of the deployment or of
    what the calling tenant holds), a missing handler and a custom tool (a deployment
    flag) are asked every time."""
    if definition.status != ToolStatus.APPROVED or not definition.enabled:
        return False
    if definition.tool_type == ToolType.SYSTEM:
        return handler is not None and handler.requires is None and handler.requires_tenant is None
    return definition.tool_type == ToolType.MCP
