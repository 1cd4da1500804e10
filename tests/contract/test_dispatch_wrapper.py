"""wrap_for_dispatch gives dispatch an envelope on every call and leaves handlers alone."""

from __future__ import annotations

import asyncio
import inspect
import logging

import pytest

from registry.contract import (
    Err,
    Hint,
    HintException,
    Ok,
    spec_for,
    uniform_contract,
    wrap_for_dispatch,
)
from registry.result import ToolResult

from . import call, fresh_name


def _legacy(inputs: dict, context: dict) -> ToolResult:
    return ToolResult(content=f"hello {inputs.get('who', 'world')}", cost=0.01)


def test_dispatched_calls_of_a_legacy_handler_get_an_envelope() -> None:
    name = fresh_name()
    uniform_contract(name=name, is_tabular=False)(_legacy)
    envelope = call(wrap_for_dispatch(name, _legacy), {"who": "ada"})
    assert isinstance(envelope, Ok)
    assert (envelope.data, envelope.effects.cost) == ("hello ada", 0.01)


class _NotFound(HintException):
    """A handler's own HintException subclass: still a hint, not a failure."""


def test_hint_exception_is_caught_before_generic_exceptions() -> None:
    def handler(inputs: dict, context: dict) -> ToolResult:
        raise _NotFound("schema", "no table 'sales'", [{"label": "sales_2024", "score": 0.8}])

    envelope = call(wrap_for_dispatch(fresh_name(), handler))
    assert isinstance(envelope, Hint)
    assert (envelope.hint_kind, envelope.alternatives[0]["label"]) == ("schema", "sales_2024")


def test_generic_exception_becomes_an_err_named_after_its_class_without_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def handler(inputs: dict, context: dict) -> ToolResult:
        raise ConnectionRefusedError("upstream refused the connection")

    with caplog.at_level(logging.ERROR, logger="registry.contract"):
        envelope = call(wrap_for_dispatch(fresh_name(), handler))
    assert envelope == Err(message="upstream refused the connection", err_kind="ConnectionRefusedError")
    assert "Traceback" not in envelope.message
    # The traceback is not lost: it goes to the server log.
    assert caplog.records[0].exc_info is not None


def test_exception_without_a_message_still_reads_as_an_error() -> None:
    def handler(inputs: dict, context: dict) -> None:
        raise TimeoutError

    assert call(wrap_for_dispatch(fresh_name(), handler)) == Err(message="(no message)", err_kind="TimeoutError")


def test_cancellation_is_not_swallowed() -> None:
    async def handler(inputs: dict, context: dict) -> str:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        call(wrap_for_dispatch(fresh_name(), handler))


def test_async_handler_is_wrapped_as_a_coroutine_function() -> None:
    async def handler(inputs: dict, context: dict) -> ToolResult:
        await asyncio.sleep(0)
        return ToolResult(content="delegated", cost=0.5)

    dispatch = wrap_for_dispatch(fresh_name(), handler)
    assert inspect.iscoroutinefunction(dispatch)
    envelope = call(dispatch)
    assert (envelope.data, envelope.effects.cost) == ("delegated", 0.5)


def test_async_handler_hints_and_exceptions_become_envelopes() -> None:
    async def hinting(inputs: dict, context: dict) -> str:
        raise HintException("ambiguous", "two candidates", [{"label": "a", "score": 0.5}, {"label": "b", "score": 0.5}])

    async def failing(inputs: dict, context: dict) -> str:
        raise PermissionError("denied")

    assert call(wrap_for_dispatch(fresh_name(), hinting)).hint_kind == "ambiguous"
    assert call(wrap_for_dispatch(fresh_name(), failing)).err_kind == "PermissionError"


def test_callable_object_with_async_call_is_wrapped_as_async() -> None:
    class Delegate:
        async def __call__(self, inputs: dict, context: dict) -> str:
            return "from object"

    dispatch = wrap_for_dispatch(fresh_name(), Delegate())
    assert inspect.iscoroutinefunction(dispatch)
    assert call(dispatch).data == "from object"


def test_sync_handler_returning_a_coroutine_is_settled_when_awaited() -> None:
    async def work() -> str:
        return "late"

    def handler(inputs: dict, context: dict) -> object:
        return work()

    assert call(wrap_for_dispatch(fresh_name(), handler)).data == "late"


def test_tool_without_spec_is_wrapped_with_a_non_tabular_default_left_unregistered() -> None:
    name = fresh_name()
    dispatch = wrap_for_dispatch(name, _legacy)
    assert dispatch.__contract_spec__.is_tabular is False
    assert spec_for(name) is None
    assert call(dispatch).warnings == []


def test_wrapping_a_wrapped_handler_does_not_wrap_twice() -> None:
    name = fresh_name()
    once = wrap_for_dispatch(name, _legacy)
    twice = wrap_for_dispatch(name, once)
    assert twice.__contract_body__ is _legacy
    assert isinstance(call(twice), Ok)


def test_wrapper_keeps_the_handlers_name_for_logs() -> None:
    assert wrap_for_dispatch(fresh_name(), _legacy).__name__ == "_legacy"


def test_handler_decorated_for_another_name_is_refused() -> None:
    @uniform_contract(name=fresh_name("decorated"), is_tabular=False)
    def handler(inputs: dict, context: dict) -> Ok:
        return Ok(rows=0)

    with pytest.raises(ValueError, match="registered for tool"):
        wrap_for_dispatch(fresh_name("other"), handler)


def test_observer_sees_every_envelope() -> None:
    seen: list[tuple[str, str]] = []
    name = fresh_name()

    def handler(inputs: dict, context: dict) -> str:
        if inputs.get("fail"):
            raise ValueError("bad input")
        return "fine"

    dispatch = wrap_for_dispatch(
        name, handler, observer=lambda tool, envelope: seen.append((tool, type(envelope).__name__))
    )
    call(dispatch)
    call(dispatch, {"fail": True})
    assert seen == [(name, "Ok"), (name, "Err")]


def test_failing_observer_does_not_fail_the_call(caplog: pytest.LogCaptureFixture) -> None:
    def broken_observer(tool: str, envelope: object) -> None:
        raise RuntimeError("telemetry backend down")

    with caplog.at_level(logging.ERROR, logger="registry.contract"):
        envelope = call(wrap_for_dispatch(fresh_name(), _legacy, observer=broken_observer))
    assert isinstance(envelope, Ok)
    assert "observer failed" in caplog.text


def test_passwords_in_exception_urls_are_masked() -> None:
    def handler(inputs: dict, context: dict) -> None:
        raise ConnectionError("cannot reach postgres://eunice:hunter2@db:5432/main")

    envelope = call(wrap_for_dispatch(fresh_name(), handler))
    assert envelope.message == "cannot reach postgres://eunice:***@db:5432/main"


def test_spec_is_resolved_once_when_the_tool_is_wrapped() -> None:
    name = fresh_name()
    dispatch = wrap_for_dispatch(name, _legacy)
    # Registered too late for this wrapper: register specs before the registry wraps.
    uniform_contract(name=name, is_tabular=True)(_legacy)
    assert call(dispatch).warnings == []
    assert len(call(wrap_for_dispatch(name, _legacy)).warnings) == 1
