"""Input validation: one compiled validator per distinct schema, reused forever."""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import fastjsonschema

from registry.flat_schema import Acceptor, acceptor

logger = logging.getLogger("eunice.registry")

Validator = Callable[[dict], None]


class InputError(ValueError):
    """Inputs broke the tool's schema. ``field`` and ``rule`` say where and how."""

    def __init__(self, message: str, *, field: str, rule: str, expected: Any = None) -> None:
        super().__init__(message)
        self.field = field
        self.rule = rule
        self.expected = expected


class Compiled:
    """A schema's validator in two parts: ``check(data)`` raises ``invalid`` (for a
    compiled schema, fastjsonschema's own exception, not yet explained), and
    ``explain`` turns that into the InputError. The dispatch path calls ``check``
    itself, one call per validation, and explains only a failure; calling the
    object does both, for everyone else (a ``Validator``).

    ``accepts``, for a flat schema of scalar fields (registry.flat_schema), is a
    quicker yes: True only for inputs ``check`` accepts, with its defaults filled
    in; False means "ask ``check``", which alone refuses and explains."""

    __slots__ = ("check", "invalid", "explain", "accepts")

    def __init__(
        self,
        check: Callable[[dict], Any],
        invalid: type[Exception],
        explain: Callable[[Any], InputError],
        accepts: Acceptor | None = None,
    ) -> None:
        self.check = check
        self.invalid = invalid
        self.explain = explain
        self.accepts = accepts

    def __call__(self, data: dict) -> None:
        if self.accepts is not None and self.accepts(data):
            return
        try:
            self.check(data)
        except self.invalid as exc:
            raise self.explain(exc) from None


_cache: dict[str, Compiled] = {}
_lock = threading.Lock()


def schema_key(schema: dict) -> str:
    return hashlib.sha1(json.dumps(schema, sort_keys=True, default=str).encode()).hexdigest()


def validator_for(schema: dict, key: str | None = None) -> Compiled:
    """Return the validator for ``schema``, compiling it on first use only."""
    key = key or schema_key(schema)
    validator = _cache.get(key)
    if validator is None:
        with _lock:
            validator = _cache.get(key) or _compile(schema)
            _cache[key] = validator
    return validator


def _compile(schema: dict) -> Compiled:
    try:
        compiled = fastjsonschema.compile(schema, use_formats=False)
    except (fastjsonschema.JsonSchemaDefinitionException, TypeError, ValueError) as exc:
        # Some external (MCP) schemas use features fastjsonschema cannot compile;
        # the reference implementation still validates them correctly, just slower.
        logger.info("falling back to jsonschema for a schema fastjsonschema rejects: %s", exc)
        return Compiled(_reference_validator(schema), InputError, _explained)

    def explain(exc: fastjsonschema.JsonSchemaValueException) -> InputError:
        return _explain_fast(exc, schema)

    return Compiled(compiled, fastjsonschema.JsonSchemaValueException, explain, acceptor(schema))


def _explained(exc: InputError) -> InputError:
    """The reference validator's errors are InputErrors already."""
    return exc


def _reference_validator(schema: dict) -> Validator:
    # Imported here: the reference implementation serves only the few schemas
    # fastjsonschema cannot compile, and costs every process ~50 ms to import.
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        message = f"the tool's own input schema is invalid: {exc.message}"

        def broken(data: dict) -> None:
            raise InputError(message, field="(schema)", rule="schema")

        return broken
    checker = cls(schema)

    def validate(data: dict) -> None:
        error = jsonschema.exceptions.best_match(checker.iter_errors(data))
        if error is not None:
            field = _field_name(["data", *error.absolute_path])
            raise InputError(
                f"{field}: {error.message} (rule: {error.validator})",
                field=field,
                rule=str(error.validator),
                expected=error.schema,
            )

    return validate


def _field_name(path: list) -> str:
    parts = [str(p) for p in path[1:]]  # drop the leading "data"
    return ".".join(parts) if parts else "(inputs)"


def _fragment(schema: dict, path: list) -> Any:
    """The sub-schema that governs ``path`` (best effort; None when unknown)."""
    node: Any = schema
    for part in path[1:]:
        if not isinstance(node, dict):
            return None
        if isinstance(part, int) or (isinstance(part, str) and part.isdigit()):
            node = node.get("items")
        else:
            node = (node.get("properties") or {}).get(part)
    return node


def _explain_fast(exc: fastjsonschema.JsonSchemaValueException, schema: dict) -> InputError:
    path = list(exc.path or ["data"])
    field = _field_name(path)
    rule = exc.rule or "schema"
    here = _fragment(schema, path) or {}
    if rule == "required":
        missing = [k for k in (exc.rule_definition or []) if not isinstance(exc.value, dict) or k not in exc.value]
        prefix = "" if field == "(inputs)" else f"{field}."
        name = f"{prefix}{missing[0]}" if missing else field
        given = sorted(exc.value) if isinstance(exc.value, dict) else []
        close = difflib.get_close_matches(missing[0], given, n=1) if missing else []
        suggestion = f"; you passed {close[0]!r}, did you mean {missing[0]!r}?" if close else ""
        return InputError(
            f"{name}: this field is required (rule: required){suggestion}",
            field=name,
            rule=rule,
            expected=(here.get("properties") or {}).get(missing[0]) if missing else None,
        )
    if rule == "additionalProperties" and isinstance(exc.value, dict):
        allowed = sorted((here.get("properties") or {}).keys())
        extra = sorted(set(exc.value) - set(allowed))
        name = extra[0] if extra else field
        close = difflib.get_close_matches(name, allowed, n=3)
        suggestion = f"; did you mean {', '.join(close)}?" if close else ""
        return InputError(
            f"{name}: not an accepted field (rule: additionalProperties); "
            f"accepted fields are {', '.join(allowed) or 'none'}{suggestion}",
            field=name,
            rule=rule,
            expected=allowed,
        )
    detail = exc.message
    if detail.startswith(exc.name or "data"):
        detail = detail[len(exc.name or "data") :].strip()
    if rule == "enum":
        detail = f"must be one of {', '.join(map(json.dumps, exc.rule_definition or []))}"
    return InputError(f"{field}: {detail} (rule: {rule})", field=field, rule=rule, expected=here or None)
