"""Source-decorated handlers speak the contract natively."""

from __future__ import annotations

import inspect

from registry.contract import Err, Hint, HintException, Ok, spec_for, uniform_contract, wrap_for_dispatch

from . import call, fresh_name

CHEMISTRY = fresh_name("lookup_chemical")

_ELEMENTS = {"Na": {"symbol": "Na", "number": 11}}


@uniform_contract(name=CHEMISTRY, is_tabular=True)
def lookup_chemical(inputs: dict, context: dict) -> Ok:
    """Look up one element by symbol."""
    symbol = inputs["symbol"]
    if symbol not in _ELEMENTS:
        raise HintException("schema", f"no element {symbol!r}", [{"label": "Na", "score": 0.7}])
    record = _ELEMENTS[symbol]
    return Ok(rows=1, data=record)


def test_decorated_handler_returns_its_ok_to_direct_callers() -> None:
    envelope = lookup_chemical({"symbol": "Na"}, {})
    assert isinstance(envelope, Ok)
    assert envelope.data == {"symbol": "Na", "number": 11}


def test_decorated_handler_raising_hint_exception_returns_a_hint() -> None:
    envelope = lookup_chemical({"symbol": "Nx"}, {})
    assert isinstance(envelope, Hint)
    assert envelope.message == "no element 'Nx'"


def test_decorated_handler_failing_returns_an_err() -> None:
    assert lookup_chemical({}, {}) == Err(message="'symbol'", err_kind="KeyError")


def test_decorator_registers_the_spec_for_the_undecorated_body() -> None:
    spec = spec_for(CHEMISTRY)
    assert spec is not None
    assert spec.is_tabular is True
    assert spec.handler is lookup_chemical.__contract_body__
    assert lookup_chemical.__doc__ == "Look up one element by symbol."


def test_decorated_handler_is_validated_against_its_spec() -> None:
    # The body returned no schema although the tool is tabular.
    warnings = lookup_chemical({"symbol": "Na"}, {}).warnings
    assert [warning.kind for warning in warnings] == ["contract"]


def test_registry_wrapping_of_a_decorated_handler_validates_once() -> None:
    envelope = call(wrap_for_dispatch(CHEMISTRY, lookup_chemical), {"symbol": "Na"})
    assert len(envelope.warnings) == 1


def test_decorated_async_handler_stays_async() -> None:
    @uniform_contract(name=fresh_name("convene"), is_tabular=False)
    async def convene(inputs: dict, context: dict) -> Ok:
        return Ok(rows=1, data="panel convened")

    assert inspect.iscoroutinefunction(convene)
    assert call(convene).data == "panel convened"
