"""A system tool, declared once: what the model reads, what runs, and how.

A tool module ends with a ``TOOLS`` tuple of ``Tool`` declarations, one per
handler it defines (see docs/tools.md). The catalog (``tools/catalog.py``)
imports those modules, checks the declarations against ``TOOL_ORDER`` in both
directions and composes the entries the registry seeds and runs. Nothing names
a handler by a string any more: ``handler_path`` is derived from the function.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

# The entry keys every composed tool has, then those it has only when set (in
# this order, so an entry reads the same as the hand-written dicts it replaced).
REQUIRED_KEYS = ("name", "description", "input_schema", "category", "handler_path")
OPTIONAL_KEYS = (
    "status_message",
    "large_output",
    "inline",
    "timeout_seconds",
    "replaced_by_model_capability",
    "sequential",
    "killable",
)


class DeclarationError(KeyError):
    """A tool declaration (or the catalog composed from them) that cannot be used.

    A KeyError, as the catalog's checks always raised, so ``eunice.E002`` and
    callers that catch it keep working. The message names the tool.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class _SchemaModel(Protocol):
    @classmethod
    def model_json_schema(cls) -> dict[str, Any]: ...


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Tool:
    """One system tool: put it in its module's ``TOOLS``, after its handler.

    ``description`` is written for the model. ``input_schema`` is a JSON
    Schema object (key order is kept: it is what the model reads) or a
    pydantic model class, whose ``model_json_schema()`` is used. ``inline``:
    a quick CPU-bound handler run on the caller's thread; ``timeout_seconds``:
    None for the deployment's default; ``sequential``: never runs alongside
    other calls of the same turn; ``large_output``: results are paged, not
    inlined; ``replaced_by_model_capability``: the provider feature that
    supersedes the tool; ``killable``: a sync handler that may hang (a
    third-party library, a blocking C call) runs in a child process that is
    killed past its timeout (registry.killable; it gets no ports). Raises DeclarationError naming the tool for an empty
    name, description or category, a schema that is not an object, or a
    handler that is not a module-level function.
    """

    name: str
    description: str
    input_schema: dict[str, Any] | type[_SchemaModel]
    handler: Callable[..., Any]
    category: str
    status_message: str | None = None
    large_output: bool = False
    inline: bool = False
    timeout_seconds: float | None = None
    replaced_by_model_capability: str | None = None
    sequential: bool = False
    killable: bool = False
    # Valid inputs the model may be shown (registry.snapshot.shows_examples decides when).
    input_examples: tuple[dict[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise DeclarationError("a tool declaration needs a name")
        for field in ("description", "category"):
            if not getattr(self, field):
                raise DeclarationError(f"tool {self.name!r} needs a {field}")
        schema = self.input_schema
        if not isinstance(schema, dict):
            schema = getattr(schema, "model_json_schema", dict)()
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise DeclarationError(f"tool {self.name!r} needs an input_schema of type 'object'")
        if not callable(self.handler) or "<" in getattr(self.handler, "__qualname__", "<"):
            raise DeclarationError(f"tool {self.name!r} needs a module-level handler function")
        spec = getattr(self.handler, "__contract_spec__", None)
        if spec is not None and spec.name != self.name:
            raise DeclarationError(f"tool {self.name!r} is declared with a handler whose contract names {spec.name!r}")
        self._check_examples(schema)

    def _check_examples(self, schema: dict[str, Any]) -> None:
        """Each input example must be valid input: checked by the validator dispatch uses
        (compiled once, kept), so a declaration without examples compiles nothing."""
        if not self.input_examples:
            return
        from registry.validation import InputError, validator_for

        validate = validator_for(schema)
        for number, example in enumerate(self.input_examples, 1):
            try:
                validate(dict(example))
            except InputError as problem:
                raise DeclarationError(f"tool {self.name!r}: input example {number} is not valid: {problem}") from None

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's input (a pydantic model's, rendered), with the
        input examples as its ``examples`` (a JSON Schema annotation: validation ignores it)."""
        schema = self.input_schema if isinstance(self.input_schema, dict) else self.input_schema.model_json_schema()
        if self.input_examples:
            schema = {**schema, "examples": [dict(example) for example in self.input_examples]}
        return schema

    @property
    def handler_path(self) -> str:
        """The handler's dotted path, stored on the tool's row (an admin may point it elsewhere)."""
        return f"{self.handler.__module__}.{self.handler.__qualname__}"

    def entry(self) -> dict[str, Any]:
        """The catalog entry: required keys, then each optional key that is set."""
        entry: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "input_schema": self.schema(),
            "category": self.category,
            "handler_path": self.handler_path,
        }
        for key in OPTIONAL_KEYS:
            value = getattr(self, key)
            if value not in (None, False):
                entry[key] = value
        return entry
