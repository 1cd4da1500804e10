"""What every call of one tool needs that depends only on its definition and its handler.

The dispatch path (``ToolRegistry._prepared``) used to look these up again on every
call: the validator by its schema's key, the handler by name, and the availability
rules for the tool's kind. A ``ToolPlan`` holds them, made at a tool's first call and
kept while the registry's definition and handler for the name are the very objects it
was made from (a reload of the definitions, or a handler registered, replaced or
removed, makes the next call build a new one). Nothing in it depends on the caller:
the gates, the tenant's right to the tool and the inputs are checked on every call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from registry import availability
from registry.models import ToolType
from registry.validation import InputError, validator_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from registry.handlers import Handler
    from registry.snapshot import Definition


@dataclass(frozen=True, slots=True)
class ToolPlan:
    definition: Definition
    registered: Handler | None  # the registry's handler for the name when made (compared by identity)
    handler: Handler | None  # what runs the call; None: routed on each call (custom tools, MCP to connect)
    check: Callable[[dict], Any]  # the compiled validator: raises ``invalid``
    invalid: type[Exception]
    explain: Callable[[Any], InputError]  # ``invalid`` to the InputError the model is told
    # A flat schema's quick yes, which also stands for the depth check (registry.flat_schema);
    # None: every call takes the depth check and ``check``.
    accepts: Callable[[dict], bool] | None
    available: bool  # availability.settled: the tool can run; False: ask on each call


def plan(definition: Definition, registered: Handler | None) -> ToolPlan:
    """The plan of ``definition``'s tool, whose registered handler is ``registered``."""
    validator = validator_for(definition.input_schema, definition.schema_key)
    # A custom tool runs its approved code's own handler (ToolRegistry._route_custom).
    handler = None if definition.tool_type == ToolType.CUSTOM else registered
    return ToolPlan(
        definition=definition,
        registered=registered,
        handler=handler,
        check=validator.check,
        invalid=validator.invalid,
        explain=validator.explain,
        accepts=validator.accepts,
        available=availability.settled(definition, registered),
    )
