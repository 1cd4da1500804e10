"""Ask a role's model for one JSON object that fits a JSON Schema, with one repair try.

The reply is parsed (a single ```json fence is tolerated) and validated with
``jsonschema``, plus any checks the caller adds that a schema cannot say (a
label given twice, a value without a citation). A reply that fails is sent
back once with the list of what was wrong; a second failure raises
``StructuredReplyError``, whose message lists the problems and is safe to show.
Every attempt's cost is counted, a repaired one's included: the caller puts the
total on its result, where the registry charges it to the tool (registry.usage);
what the attempts of a failed call cost rides on the error, for the caller to charge.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eunice.jsonlimits import JSONTooDeep, loads_bounded

# Problems quoted back to the model (and in the error): the first few say enough.
MAX_PROBLEMS = 8

Check = Callable[[Any], list[str]]


class ModelUnavailable(Exception):
    """No model serves the role (offline, or a row naming an unknown provider); the message says how to set one."""


class StructuredReplyError(Exception):
    """The model failed, or answered twice with JSON that does not fit; the message says why.

    ``cost`` is what the answered attempts cost, for the caller to charge
    (registry.usage.charge_failure): an Err carries no cost of its own.
    """

    def __init__(self, message: str, cost: float) -> None:
        super().__init__(message)
        self.cost = cost


@dataclass(frozen=True)
class StructuredReply:
    data: Any
    cost: float
    attempts: int
    model: str


def ask_structured(
    role: str,
    *,
    system: str,
    prompt: str,
    schema: dict[str, Any],
    check: Check | None = None,
) -> StructuredReply:
    """The role model's answer to ``prompt`` as JSON valid against ``schema`` (and ``check``).

    Raises ModelUnavailable when the role has no model, StructuredReplyError when the
    call fails or both replies are unusable (``.cost`` is what the attempts cost).
    """
    from llm import LLMConfigError, LLMError, LLMRequest
    from llm.errors import RoleOffline
    from llm.roles import callable_model_for_role

    try:
        config, client = callable_model_for_role(role)
    except RoleOffline as exc:
        raise ModelUnavailable(
            f"{exc} Add an active ModelConfig row for the {role!r} role (or for chat) in the admin."
        ) from None
    except LLMConfigError as exc:
        raise ModelUnavailable(str(exc)) from None
    system = f"{system}\n\nReply with exactly one JSON object and nothing else. It must fit this JSON Schema:\n" + (
        json.dumps(schema, ensure_ascii=False)
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    cost = 0.0
    for attempt in (1, 2):
        request = LLMRequest.for_model(config, system=system, messages=messages, tools=[])
        try:
            response = client.complete(request)
        except LLMError as exc:
            raise StructuredReplyError(f"the {role} model call failed: {exc}", cost) from None
        cost += response.usage.cost_usd(config)
        data, problems = _parsed(response.text, schema, check)
        if not problems:
            return StructuredReply(data, cost, attempt, config.model)
        messages += [
            {"role": "assistant", "content": response.text or "(empty reply)"},
            {"role": "user", "content": _repair_request(problems)},
        ]
    raise StructuredReplyError(
        f"the {role} model's reply did not fit the schema after one repair try: {'; '.join(problems)}", cost
    )


def _parsed(reply: str, schema: dict[str, Any], check: Check | None) -> tuple[Any, list[str]]:
    """The reply's JSON and what is wrong with it (nothing: an empty list)."""
    text = reply.strip()
    if text.startswith("```") and text.endswith("```"):
        text = text[3:-3].removeprefix("json").strip()
    try:
        data = loads_bounded(text, what="the model's reply")
    except JSONTooDeep as exc:
        return None, [str(exc)]
    except json.JSONDecodeError as exc:
        return None, [f"the reply is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"]
    problems = schema_problems(data, schema)
    if not problems and check is not None:
        problems = check(data)
    return data, problems[:MAX_PROBLEMS]


def schema_problems(data: Any, schema: dict[str, Any]) -> list[str]:
    """Each way ``data`` breaks ``schema``, as ``at PATH: MESSAGE``, in document order."""
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    return [f"at {_path(error.absolute_path)}: {_short(error.message)}" for error in errors]


def _path(parts: Any) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)
    return path.lstrip(".") or "the top level"


def _short(message: str, limit: int = 300) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def _repair_request(problems: list[str]) -> str:
    listed = "\n".join(f"- {p}" for p in problems)
    return (
        f"Your reply does not fit the required JSON Schema:\n{listed}\n"
        "Reply again with the whole corrected JSON object and nothing else."
    )
