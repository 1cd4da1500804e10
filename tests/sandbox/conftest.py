"""Sandbox helpers: `run(code)` straight into a jailed run, and approved custom tools."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from registry.sandbox import service
from registry.sandbox.client import RunOutcome


@pytest.fixture(scope="session", autouse=True)
def _zygote_stops_at_the_end():
    yield
    service.shutdown()


def _no_tools(name: str, inputs: dict) -> str:
    return f"called {name}"


def run(code: str, *, inputs: dict | None = None, df: pd.DataFrame | None = None,
        language: bool = True, call_tool=_no_tools, **limits) -> RunOutcome:
    """One run in a jailed child, with the deployment's limits unless overridden."""
    chosen = dataclasses.replace(service.limits(), **limits)
    datasets = {"default": df} if df is not None else {}
    return service.zygote().run(code, inputs or {}, datasets, chosen, call_tool, language=language)


def output(outcome: RunOutcome) -> str:
    assert outcome.ok, outcome.error
    answer = outcome.answer or {}
    return answer.get("text") or str(answer.get("response"))


SALES = pd.DataFrame(
    {
        "region": ["north", "south", "north", "east", "south", "east"],
        "product": ["a", "b", "a", "c", "c", "b"],
        "units": [10, 4, 7, 3, 8, 5],
        "price": [2.5, 4.0, 2.5, 10.0, 10.0, 4.0],
        "day": pd.to_datetime(["2024-01-01", "2024-01-03", "2024-02-01", "2024-02-10", "2024-03-01", "2024-03-02"]),
    }
)


@pytest.fixture
def language_layer_bypassed(monkeypatch):
    """Runs execute plain Python, as if an attacker had got past the language layer:
    what holds then is the OS layer and the host alone."""
    monkeypatch.setattr(service, "LANGUAGE_LAYER", False)


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("reviewer", password="pw", is_staff=True)


@pytest.fixture
def custom_tools_on(settings):
    settings.FEATURE_FLAGS = {**settings.FEATURE_FLAGS, "custom_tools_enabled": True}
    return settings


@pytest.fixture
def approved_tool(staff, custom_tools_on):
    """approved_tool(name, code, schema=None, tenant="acme", dependencies=()) -> an approved custom tool."""
    from registry.custom_tools import approve_custom_tool, register_custom_tool

    def make(name: str, code: str, schema: dict | None = None, tenant: str = "acme", dependencies=()):
        tool = register_custom_tool(name=name, code=code, description=f"Custom tool {name}.",
                                    input_schema=schema or {"type": "object", "properties": {}},
                                    tenant_id=tenant)
        if dependencies:
            tool.dependencies = list(dependencies)
            tool.save(update_fields=["dependencies"])
        return approve_custom_tool(tool, acting_user=staff)

    return make
