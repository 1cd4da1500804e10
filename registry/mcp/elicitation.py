"""A server's request for the person's input mid-call (elicitation, form or URL mode),
sent to the person whose call it is, never to the model.

Either revision asks through the same callback: at 2025-11-25 the server sends an
``elicitation/create`` request while the call runs, at 2026-07-28 it answers the call with
``input_required`` and the connection answers its requests (``connection._with_input``).
Who answers is the asker the call was made with (``QuestionAsker.elicit``: the person on
the conversation's socket). The 2026-07-28 requests are answered inside the call's own
task, so its asker is known exactly; a 2025-11-25 request does not say which call it
belongs to, so it goes to the one call of that session with a person behind it, and is
refused when several are (it cannot be told whose it is) or none is (nobody to ask).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

ACTIONS = ("accept", "decline", "cancel")
PRIMITIVES = ("string", "number", "integer", "boolean")

# The asker of the call this task runs (the 2026-07-28 path answers in the call's task).
_current: contextvars.ContextVar[Any] = contextvars.ContextVar("mcp_asker", default=None)


@dataclass(frozen=True)
class Elicitation:
    """What the server asks, as the chat page shows it."""

    server: str
    mode: str  # "form", "url", or "sampling" (registry/mcp/sampling.py: approve a model call)
    message: str
    schema: dict = field(default_factory=dict)  # form mode: a flat object of primitive fields
    url: str = ""  # url mode: where the person is sent
    elicitation_id: str = ""
    messages: tuple[dict, ...] = ()  # sampling: what the model would be sent ({"role", "text"})
    system: str = ""
    max_tokens: int = 0

    def as_chunk(self) -> dict:
        chunk: dict[str, Any] = {"server": self.server, "mode": self.mode, "message": self.message}
        if self.mode == "url":
            chunk.update(url=self.url, elicitation_id=self.elicitation_id)
        elif self.mode == "sampling":
            chunk.update(messages=list(self.messages), system=self.system, max_tokens=self.max_tokens)
        else:
            chunk["schema"] = self.schema
        return chunk


class Person:
    """The person behind one call (its context's ``QuestionAsker``): answers the server's
    requests during the call, and keeps what the model calls they approved for it cost,
    so that the cost is charged to the call's tool, on its server (``bill``)."""

    def __init__(self, questions: Any) -> None:
        self._questions = questions
        self.spent = 0.0
        self.key = getattr(questions, "key", None) or id(questions)  # who is asked (a conversation)

    @classmethod
    def behind(cls, context: Any) -> Person | None:
        return cls(context.questions) if context.questions is not None else None

    async def elicit(self, request: Elicitation, timeout: float) -> dict | None:
        return await self._questions.elicit(request, timeout)

    def bill(self, result: Any, context: Any) -> Any:
        """``result`` carrying what was spent for the call: on an Ok as its cost (charged with
        the call, counted by the turn's budget); after an Err, written to the usage log
        here, under the call's tool. Needs the database for an Err."""
        from registry.contract import Ok
        from registry.usage import ledger

        if not self.spent:
            return result
        if isinstance(result, Ok):
            result.effects.cost += self.spent
        elif (installed := ledger.installed()) is not None:
            installed.tool_cost(context, context.tool_name, self.spent, success=False)
        return result


class Askers:
    """The askers of one session's calls in flight (one entry per call; None for a call
    nobody watches)."""

    def __init__(self) -> None:
        self._calls: list[Any] = []

    @contextmanager
    def calling(self, asker: Any) -> Iterator[None]:
        self._calls.append(asker)
        token = _current.set(asker)
        try:
            yield
        finally:
            _current.reset(token)
            self._calls.remove(asker)

    def whose(self) -> tuple[Any, str]:
        """The asker for a request that arrives now, or None and why nobody is asked."""
        current = _current.get()
        if current is not None:
            return current, ""
        # Calls of one conversation have one person behind them: key by whom they ask.
        people = {getattr(asker, "key", id(asker)): asker for asker in self._calls if asker is not None}
        if len(people) == 1:
            return next(iter(people.values())), ""
        if people:
            return None, "several calls with a person behind them are in flight; the request cannot be told apart"
        return None, "no person is there to answer (the call was not made from the chat page)"


def callback(askers: Askers, server: str) -> Any:
    """The SDK's elicitation callback for a session: the person answers, or the request is
    refused with an error saying why nobody could."""

    async def elicit(context: Any, params: Any) -> Any:
        import mcp_types

        request = _request(server, params)
        person, answer = await ask(askers, request, "Elicitation")
        if person is None or isinstance(request, str):
            return answer
        return mcp_types.ElicitResult(**settle(request, answer))

    return elicit


async def ask(askers: Askers, request: Elicitation | str, what: str) -> tuple[Any, Any]:
    """(the person behind the call, their answer or None), or (None, the ErrorData to answer
    the server with): nobody to ask, or ``request`` is the reason it cannot be shown."""
    import mcp_types

    person, why = askers.whose()
    if person is None:
        return None, mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=f"{what} refused: {why}")
    if isinstance(request, str):
        return None, mcp_types.ErrorData(code=mcp_types.INVALID_PARAMS, message=request)
    return person, await person.elicit(request, settings.EUNICE_QUESTION_TIMEOUT)


def _request(server: str, params: Any) -> Elicitation | str:
    """The request as shown to the person, or why it cannot be shown."""
    if getattr(params, "mode", "form") == "url":
        url = str(params.url)
        if not url.startswith(("https://", "http://")):
            return f"Elicitation refused: the URL must be http(s), got {url[:80]!r}"
        return Elicitation(server, "url", params.message, url=url, elicitation_id=params.elicitation_id)
    schema = params.requested_schema
    schema = schema if isinstance(schema, dict) else schema.model_dump(by_alias=True, exclude_none=True)
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        if kind not in PRIMITIVES and not (kind == "array" and "items" in prop):
            return f"Elicitation refused: field {name!r} has type {kind!r}; a form takes {', '.join(PRIMITIVES)}"
    return Elicitation(server, "form", params.message, schema=schema)


def settle(request: Elicitation, answer: dict | None) -> dict:
    """The person's answer as an ElicitResult's fields: no answer in time is a cancel, and an
    accepted form keeps only the fields the schema asked for, coerced to their types."""
    if not answer or answer.get("action") not in ACTIONS:
        return {"action": "cancel"}
    if answer["action"] != "accept" or request.mode == "url":
        return {"action": answer["action"]}
    content = answer.get("content")
    content = content if isinstance(content, dict) else {}
    properties = request.schema.get("properties") or {}
    kept = {name: _coerce(properties[name], value) for name, value in content.items() if name in properties}
    return {"action": "accept", "content": {name: value for name, value in kept.items() if value is not None}}


def _coerce(prop: dict, value: Any) -> Any:
    kind = prop.get("type")
    try:
        if kind == "integer":
            return int(value) if value not in ("", None) else None
        if kind == "number":
            return float(value) if value not in ("", None) else None
        if kind == "boolean":
            return value if isinstance(value, bool) else str(value).lower() in ("true", "on", "1", "yes")
        if kind == "array":
            return [str(item) for item in value] if isinstance(value, list) else [str(value)]
    except (TypeError, ValueError):
        return None
    return None if value is None else str(value)
