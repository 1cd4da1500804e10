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


def run(
    code: str,
    *,
    inputs: dict | None = None,
    df: pd.DataFrame | None = None,
    language: bool = True,
    call_tool=_no_tools,
    **limits,
) -> RunOutcome:
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


def make_reviewer(username: str, tenant: str = "acme", *, shared: bool = True):
    """A staff member of ``tenant`` who may approve its custom tools (and the shared ones)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    from registry.models import TenantMembership

    user = get_user_model().objects.create_user(username, password="pw", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=tenant)
    codenames = [
        "approve_tooldefinition",
        "view_tooldefinition",
        "change_tooldefinition",
        *(["review_shared_tooldefinition"] if shared else []),
    ]
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="registry", codename__in=codenames))
    return get_user_model().objects.get(pk=user.pk)  # a fresh object: no stale permission cache


@pytest.fixture
def language_layer_bypassed(monkeypatch):
    """Runs execute plain Python, as if an attacker had got past the language layer:
    what holds then is the OS layer and the host alone."""
    monkeypatch.setattr(service, "LANGUAGE_LAYER", False)


@pytest.fixture
def staff(django_user_model):
    return make_reviewer("reviewer")


@pytest.fixture
def custom_tools_on(settings):
    settings.FEATURE_FLAGS = {**settings.FEATURE_FLAGS, "custom_tools_enabled": True}
    return settings


@pytest.fixture
def approved_tool(staff, custom_tools_on):
    """approved_tool(name, code, schema=None, tenant="acme", dependencies=()) -> an approved custom tool."""
    from registry.custom_tools import approve_custom_tool, register_custom_tool

    def make(name: str, code: str, schema: dict | None = None, tenant: str = "acme", dependencies=()):
        tool = register_custom_tool(
            name=name,
            code=code,
            description=f"Custom tool {name}.",
            input_schema=schema or {"type": "object", "properties": {}},
            tenant_id=tenant,
            dependencies=dependencies,
        )
        reviewer = staff if tenant in ("acme", "*") else make_reviewer(f"reviewer-{tenant}", tenant)
        # Hostile code fails the static audit; these tests show the runtime holds anyway.
        override = "" if tool.test_results.get("passed") else "a test of the runtime's own refusal"
        return approve_custom_tool(tool, acting_user=reviewer, override_reason=override)

    return make
