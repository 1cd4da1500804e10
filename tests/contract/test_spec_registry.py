"""One module-level spec table: one spec per name, never silently replaced."""

from __future__ import annotations

import pytest

from registry.contract import registered_names, spec_for, uniform_contract

from . import fresh_name


def _summarize(inputs: dict, context: dict) -> str:
    return "summary"


def _other(inputs: dict, context: dict) -> str:
    return "other"


def test_spec_for_unknown_tool_is_none() -> None:
    assert spec_for(fresh_name("never_registered")) is None


def test_a_declared_tool_has_a_spec_with_its_flags() -> None:
    name = fresh_name()
    uniform_contract(name=name, is_tabular=True, is_cost_rollup=True, expected_envelopes={"ok", "err"})(_summarize)
    spec = spec_for(name)
    assert spec is not None
    assert (spec.handler, spec.is_tabular, spec.is_cost_rollup) == (_summarize, True, True)
    assert spec.expected_envelopes == frozenset({"ok", "err"})


def test_registered_names_include_declared_tools() -> None:
    name = fresh_name()
    uniform_contract(name=name, is_tabular=False)(_summarize)
    assert name in registered_names()


def test_registering_another_handler_under_a_taken_name_raises() -> None:
    name = fresh_name()
    uniform_contract(name=name, is_tabular=False)(_summarize)
    with pytest.raises(ValueError, match="already has a contract spec"):
        uniform_contract(name=name, is_tabular=False)(_other)
    assert spec_for(name).handler is _summarize


def test_changing_flags_under_a_taken_name_raises() -> None:
    name = fresh_name()
    uniform_contract(name=name, is_tabular=False)(_summarize)
    with pytest.raises(ValueError, match="already has a contract spec"):
        uniform_contract(name=name, is_tabular=True)(_summarize)


def test_reregistering_the_same_handler_is_harmless() -> None:
    name = fresh_name()
    uniform_contract(name=name, is_tabular=False)(_summarize)
    uniform_contract(name=name, is_tabular=False)(_summarize)
    assert spec_for(name).handler is _summarize


def test_reimported_handler_with_the_same_qualified_name_is_the_same_tool() -> None:
    name = fresh_name()
    uniform_contract(name=name, is_tabular=False)(_summarize)

    def reloaded(inputs: dict, context: dict) -> str:
        return "summary"

    # What a module reload produces: a new function object for the same code path.
    reloaded.__qualname__ = _summarize.__qualname__
    uniform_contract(name=name, is_tabular=False)(reloaded)
    assert spec_for(name).handler is reloaded
