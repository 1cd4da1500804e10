"""A quick yes for the common tool schema: a flat object of scalar fields.

Most tools take an object whose properties are strings, integers, numbers,
booleans or nulls, with at most a length, a range, a list of choices or a
default each, and no field outside them. For such a schema ``acceptor``
makes a function that says True only for inputs the general validator
(fastjsonschema, ``registry.validation``) accepts, filling in the same
defaults in the same order; for anything it is not sure of it says False
and changes nothing, and the caller asks the general validator, which gives
the verdict and the error message the model reads. So this module never
decides a refusal, and what the model is told never changes.

Its yes is also the depth check's (``eunice.jsonlimits.check_depth``): the
values it accepts are scalars, so the inputs are one level deep.

Only exact types pass (``type(value) is int``, not a subclass) and only the
keywords below are understood; a schema with any other keyword gets no
acceptor at all. ``format`` is listed as an annotation because the general
validator is compiled without formats.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Acceptor = Callable[[dict], bool]
Check = Callable[[Any], bool]

# The exact Python types whose values every validator accepts for a JSON type
# (fastjsonschema accepts more: an integral float as an integer, a Decimal as a
# number, subclasses; those inputs go to it).
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
# Keywords no validator acts on (formats are off: ``validation._compile``).
_ANNOTATIONS = frozenset(
    {"description", "title", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "format"}
)
_TOP = frozenset({"type", "properties", "required", "additionalProperties"}) | _ANNOTATIONS
_FIELD = (
    frozenset({"type", "enum", "default", "minLength", "maxLength", "minimum", "maximum"})
    | frozenset({"exclusiveMinimum", "exclusiveMaximum"})
    | _ANNOTATIONS
)
_SCALARS = (str, int, float, bool, type(None))  # defaults assigned as they are: nothing to copy


def acceptor(schema: Any) -> Acceptor | None:
    """The quick yes for ``schema`` (see the module's docstring), or None when
    ``schema`` is not a flat object of scalar fields closed to other fields."""
    if not _is_flat_object(schema):
        return None
    rules: dict[str, tuple[tuple[type, ...], Check | None]] = {}
    defaults: list[tuple[str, Any]] = []
    for name, spec in schema["properties"].items():
        rule = _field_rule(spec)
        if rule is None:
            return None
        rules[name] = rule
        if "default" in spec:
            defaults.append((name, spec["default"]))
    return _make(rules, frozenset(schema.get("required", ())), tuple(defaults))


def _make(
    rules: dict[str, tuple[tuple[type, ...], Check | None]],
    required: frozenset[str],
    defaults: tuple[tuple[str, Any], ...],
) -> Acceptor:
    # Each field's rule also says whether it is required (1) or not (0): the loop over
    # the inputs checks every name is a field and counts the required ones given, in
    # place of two set comparisons of the names (a third of the acceptor's cost).
    fields = {name: (types, check, int(name in required)) for name, (types, check) in rules.items()}
    needed = len(required)

    def accepts(data: dict) -> bool:
        if type(data) is not dict:
            return False
        given = 0
        for name, value in data.items():
            field = fields.get(name)
            if field is None:
                return False
            types, check, counts = field
            if type(value) not in types or (check is not None and not check(value)):
                return False
            given += counts
        if given != needed:  # (names are unique: each required one given, or one is missing)
            return False
        # Only once the inputs are accepted, in the schema's order, as fastjsonschema does.
        for name, default in defaults:
            if name not in data:
                data[name] = default
        return True

    return accepts


def _is_flat_object(schema: Any) -> bool:
    if not isinstance(schema, dict) or not schema.keys() <= _TOP:
        return False
    properties = schema.get("properties")
    required = schema.get("required", [])
    return (
        schema.get("type") == "object"
        and schema.get("additionalProperties") is False
        and isinstance(properties, dict)
        and isinstance(required, list)
        and all(type(name) is str for name in required)
    )


def _field_rule(spec: Any) -> tuple[tuple[type, ...], Check | None] | None:
    """The exact types a field's value may have and the check of its other keywords,
    or None when the field is not one this module understands."""
    if not isinstance(spec, dict) or not spec.keys() <= _FIELD:
        return None
    types = _types_of(spec.get("type"))
    if types is None:
        return None
    if "default" in spec and type(spec["default"]) not in _SCALARS:
        return None
    checks = [_strings(spec), _numbers(spec), _choices(spec)]
    if any(check is False for check in checks):
        return None
    present = [check for check in checks if check is not None and check is not False]
    if not present:
        return types, None
    if len(present) == 1:
        return types, present[0]  # type: ignore[return-value]
    return types, lambda value: all(check(value) for check in present)  # type: ignore[operator]


def _types_of(declared: Any) -> tuple[type, ...] | None:
    names = declared if isinstance(declared, list) else [declared]
    if not names or any(not isinstance(name, str) or name not in _TYPES for name in names):
        return None
    found: list[type] = []
    for name in names:
        found.extend(kind for kind in _TYPES[name] if kind not in found)
    return tuple(found)


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _is_bound(value: Any) -> bool:
    return type(value) in (int, float)


def _strings(spec: dict) -> Check | bool | None:
    """minLength and maxLength, which bind strings only (False: a bound not understood)."""
    if "minLength" not in spec and "maxLength" not in spec:
        return None
    low, high = spec.get("minLength", 0), spec.get("maxLength", 0)
    if not _is_count(low) or not _is_count(high):
        return False
    most = spec["maxLength"] if "maxLength" in spec else float("inf")
    return lambda value: type(value) is not str or low <= len(value) <= most


def _numbers(spec: dict) -> Check | bool | None:
    """minimum, maximum and the exclusive ones (numbers, as in draft 7), which bind
    ints and floats, never booleans (False: a bound not understood)."""
    keys = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    if not any(key in spec for key in keys):
        return None
    if any(key in spec and not _is_bound(spec[key]) for key in keys):
        return False
    low, high, above, below = (spec.get(key) for key in keys)

    def within(value: Any) -> bool:
        if type(value) not in (int, float):
            return True
        # Each a refusal of the general validator, negated: NaN passes both alike.
        return not (
            (low is not None and value < low)
            or (high is not None and value > high)
            or (above is not None and value <= above)
            or (below is not None and value >= below)
        )

    return within


def _choices(spec: dict) -> Check | bool | None:
    """enum, when every choice is a string (False: any other list of choices)."""
    if "enum" not in spec:
        return None
    choices = spec["enum"]
    if not isinstance(choices, list) or not choices or any(type(choice) is not str for choice in choices):
        return False
    allowed = frozenset(choices)
    return lambda value: type(value) is str and value in allowed
