"""Handlers of the primitive tools: create a small typed function, and validate it on its examples.

A primitive is Python run in the sandbox (the custom tools' language policy and
limits): it reads ``inputs`` (checked against its input schema) and assigns
``result`` (checked against its output schema). ``create_primitive`` takes the
code, or asks the builder model (role ``tool_builder``) to write it from the
description and examples; either way the primitive is run on every example and
stored with that report, pending a staff member's hash-bound approval
(tools.capability_actions). Making and validating run code not yet reviewed,
so they need staff or the ``tools.add_primitive`` permission; ``call_primitive``
runs only an approved primitive, for any user of its tenant and from sandboxed
code (it is in ``SANDBOX_CALLABLE``). All three need the custom-tools feature.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.core.exceptions import ValidationError

from registry.availability import custom_tools_on
from registry.builder_llm import BUILDER_ROLE, BuildFailed, model_for, propose
from registry.context import ToolContext
from registry.contract import Err, HintException, Ok, uniform_contract
from registry.declarations import Tool
from registry.handlers import requires, requires_tenant
from registry.sandbox import service
from tools import capability_actions as actions
from tools import holdings
from tools.actors import may
from tools.lib.closest import not_found
from tools.models import Primitive

CREATE_PERMISSION = "tools.add_primitive"
# The code's own ``result`` is wrapped so that any JSON value comes back as data, not text.
_WRAP = "\nresult = {'message': 'primitive', 'value': result}\n"
EXAMPLES = {
    "type": "array",
    "minItems": 1,
    "maxItems": actions.MAX_EXAMPLES,
    "items": {
        "type": "object",
        "properties": {"input": {"type": "object"}, "output": {}},
        "required": ["input", "output"],
        "additionalProperties": False,
    },
    "description": "Inputs with the exact output expected, e.g. {'input': {'celsius': 100}, 'output': 212}.",
}


def _refusal(context: ToolContext) -> Err | None:
    if not may(context, CREATE_PERMISSION):
        return Err(
            f"primitives run code: this needs a staff member or the {CREATE_PERMISSION} permission", "PermissionDenied"
        )
    return None


def _same(got: Any, expected: Any) -> bool:
    """JSON equality, with floats equal to a relative 1e-9."""
    if isinstance(got, (int, float)) and isinstance(expected, (int, float)) and not isinstance(got, bool):
        return not isinstance(expected, bool) and math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(_same(a, b) for a, b in zip(got, expected, strict=True))
    if isinstance(got, dict) and isinstance(expected, dict):
        return got.keys() == expected.keys() and all(_same(got[k], expected[k]) for k in got)
    return bool(got == expected)


def _first_error(schema: dict, value: Any) -> str | None:
    import jsonschema  # loaded where a value is checked, not with the catalog

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "(top)"
    return f"{where}: {error.message}"


def run_primitive(primitive: Primitive, inputs: dict, context: ToolContext) -> tuple[Any, str | None]:
    """Run ``primitive`` on ``inputs`` (checked against its input schema first): its output
    (checked against its output schema), or None and what went wrong."""
    problem = _first_error(primitive.input_schema, inputs)
    if problem is not None:
        return None, f"the input breaks the input schema at {problem}"
    outcome = service.run_code(
        primitive.code + _WRAP,
        inputs,
        context,
        tool_name=f"primitive:{primitive.name}"[:64],
        definition_hash=primitive.content_hash,
    )
    if not outcome.ok:
        return None, f"{outcome.error} [stopped by: {outcome.stopped_by or 'tool'}]"
    got = ((outcome.answer or {}).get("response") or {}).get("value")
    problem = _first_error(primitive.output_schema, got)
    if problem is not None:
        return got, f"the output breaks the output schema at {problem}"
    return got, None


def run_example(primitive: Primitive, example: dict, context: ToolContext) -> dict:
    """One example through the sandbox: what came back and whether it is the expected output."""
    got, error = run_primitive(primitive, example["input"], context)
    result: dict[str, Any] = {"input": example["input"], "expected": example["output"], "got": got}
    if error is not None:
        return {**result, "passed": False, "error": error}
    return {**result, "passed": _same(got, example["output"])}


def _report(primitive: Primitive, results: list[dict]) -> str:
    passed = sum(result["passed"] for result in results)
    lines = [f"Primitive {primitive.name}: {passed} of {len(results)} example(s) pass."]
    for n, result in enumerate(results, 1):
        if not result["passed"]:
            got = json.dumps(result.get("got"), default=str)[:200]
            why = result.get("error") or f"expected {json.dumps(result['expected'])[:200]}, got {got}"
            lines.append(f"- example {n} {json.dumps(result['input'])[:200]}: {why}")
    if passed == len(results):
        lines.append("It waits for a staff member to approve it (Tools → Primitives in the admin).")
    else:
        lines.append("Fix the code with create_primitive under a new name, or correct the examples.")
    return "\n".join(lines)


def _code(inputs: dict) -> str:
    """The given code, or the builder model's from the description and examples."""
    if inputs.get("code"):
        return str(inputs["code"])
    request = (
        f"{inputs['description']}\nIt is a pure function: read `inputs`, assign the output to `result`.\n"
        f"Input schema: {json.dumps(inputs['input_schema'])}\nOutput schema: {json.dumps(inputs['output_schema'])}\n"
        f"Examples (input → output): {json.dumps(inputs['examples'])[:4000]}"
    )
    try:
        return propose(model_for(BUILDER_ROLE), name=inputs["name"], request=request).code
    except BuildFailed as exc:
        raise HintException(
            "schema", f"code: none given and the builder could not write it ({exc}); pass the code"
        ) from None


def _extra_line(result: dict) -> str:
    outcome = (
        "passes" if result["passed"] else result.get("error") or "got " + json.dumps(result.get("got"), default=str)
    )
    return f"- {json.dumps(result['input'])[:200]}: {outcome[:300]}"


@requires(custom_tools_on)
@uniform_contract(name="create_primitive", is_tabular=False)
def create_primitive(inputs: dict, context: ToolContext) -> Ok | Err:
    """Store a primitive pending review and validate it on its examples at once."""
    refused = _refusal(context)
    if refused is not None:
        return refused
    definition = {key: inputs[key] for key in ("name", "description", "input_schema", "output_schema", "examples")}
    try:
        primitive = actions.create_primitive(
            tenant_id=context.tenant_id, actor=f"user:{context.user_id}", code=_code(inputs), **definition
        )
    except ValidationError as exc:
        raise HintException("schema", "; ".join(exc.messages)) from None
    results = [run_example(primitive, example, context) for example in primitive.examples]
    primitive = actions.record_validation(primitive, results, actor=f"user:{context.user_id}")
    return Ok(rows=len(results), data=_report(primitive, results))


@requires(custom_tools_on)
@requires_tenant(holdings.any_primitive)
@uniform_contract(name="validate_primitive", is_tabular=False)
def validate_primitive(inputs: dict, context: ToolContext) -> Ok | Err:
    """Run a primitive of this tenant on its stored examples (the report is kept) and on any extra ones."""
    refused = _refusal(context)
    if refused is not None:
        return refused
    primitive = _primitive(context, inputs["name"])
    results = [run_example(primitive, example, context) for example in primitive.examples]
    primitive = actions.record_validation(primitive, results, actor=f"user:{context.user_id}")
    extra = [run_example(primitive, example, context) for example in inputs.get("extra_examples") or []]
    text = _report(primitive, results)
    if extra:
        text += "\nExtra examples (not stored):\n" + "\n".join(_extra_line(result) for result in extra)
    return Ok(rows=len(results) + len(extra), data=text)


def _primitive(context: ToolContext, name: str) -> Primitive:
    """The tenant's primitive ``name``, or a fetch hint naming the closest ones."""
    primitives = Primitive.objects.for_tenant(context.tenant_id)
    primitive = primitives.filter(name=name).first()
    if primitive is None:
        raise not_found(
            f"name: no primitive named {name!r} here",
            name,
            primitives.values_list("name", flat=True),
            narrow="create it with create_primitive",
        )
    return primitive


@requires(custom_tools_on)
@requires_tenant(holdings.usable_primitive)
@uniform_contract(name="call_primitive", is_tabular=False)
def call_primitive(inputs: dict, context: ToolContext) -> Ok | Err:
    """Run an approved primitive of the caller's tenant on ``inputs``; its output as JSON."""
    primitive = _primitive(context, inputs["name"])
    if not primitive.is_usable():
        raise HintException(
            "schema",
            f"name: primitive {primitive.name!r} is not approved as it is now; a staff member must review it first",
        )
    got, error = run_primitive(primitive, inputs.get("inputs") or {}, context)
    if error is not None and error.startswith("the input breaks"):
        raise HintException("schema", f"inputs: {error}")
    if error is not None:
        return Err(f"{primitive.name}: {error}", "PrimitiveFailed")
    return Ok(rows=1, data=json.dumps(got, default=str))


TOOLS = (
    Tool(
        name="create_primitive",
        description=(
            "Define a primitive: a small typed function that custom tools and Agent Skills reuse, from a name, "
            "what it computes, input and output JSON Schemas and examples with exact outputs; the Python "
            "(reads `inputs`, assigns `result`) is given or the builder drafts it. It is checked on every "
            "example at once; a staff member approves it before use."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "pattern": "^[a-z][a-z0-9_]{0,63}$",
                    "description": "snake_case, e.g. celsius_to_fahrenheit.",
                },
                "description": {"type": "string", "minLength": 1, "maxLength": 2000},
                "input_schema": {"type": "object", "description": "JSON Schema of `inputs`, with type 'object'."},
                "output_schema": {"type": "object", "description": "JSON Schema of `result`."},
                "examples": EXAMPLES,
                "code": {"type": "string", "maxLength": actions.MAX_CODE_CHARS, "description": "Python; optional."},
            },
            "required": ["name", "description", "input_schema", "output_schema", "examples"],
            "additionalProperties": False,
        },
        handler=create_primitive,
        category="skills",
        status_message="Making the primitive",
        sequential=True,
    ),
    Tool(
        name="validate_primitive",
        description=(
            "Re-check a primitive against its stored input/output examples and say which pass (what its "
            "reviewer sees); extra_examples are tried too but not stored."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 64},
                "extra_examples": {**EXAMPLES, "minItems": 0},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        handler=validate_primitive,
        category="skills",
        status_message="Checking the primitive",
    ),
    Tool(
        name="call_primitive",
        description=(
            "Run an approved primitive (a small typed function of this tenant) by name on inputs that "
            "meet its input schema; returns its output as JSON. Custom tools and skill scripts reach it "
            "with call_tool when they declare it."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 64},
                "inputs": {"type": "object", "description": "What the primitive reads as `inputs`."},
            },
            "required": ["name", "inputs"],
            "additionalProperties": False,
        },
        handler=call_primitive,
        category="skills",
        status_message="Running the primitive",
    ),
)
