"""Builder cast: the scripted Messages API server as the tool_builder and tool_auditor models."""

from __future__ import annotations

import json

import pytest

from llm.models import ModelConfig
from registry.context import ToolContext
from tests.llm.conftest import TEST_KEY, _no_hosted_model, scripted  # noqa: F401 - shared fixtures
from tests.sandbox.conftest import _zygote_stops_at_the_end, custom_tools_on, staff  # noqa: F401

PLUS_ONE = {
    "description": "Adds one to an integer n and returns the sum.",
    "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    "code": "result = inputs['n'] + 1",
    "test_cases": [{"inputs": {"n": 1}, "expect": "2"}, {"inputs": {"n": 41}, "expect": "42"}],
}
APPROVE = {"verdict": "approve", "summary": "Adds one, as described; both cases pass.", "concerns": []}


def builder_turn(reply: object) -> dict:
    """The builder model's turn: ``reply`` as JSON text (a str is sent as is)."""
    return {
        "text": reply if isinstance(reply, str) else json.dumps(reply),
        "expect": {"system_contains": "You write custom tools", "stream": False},
    }


def auditor_turn(reply: object) -> dict:
    return {
        "text": reply if isinstance(reply, str) else json.dumps(reply),
        "expect": {"system_contains": "You audit custom tools", "stream": False},
    }


@pytest.fixture
def models(scripted, settings):  # noqa: F811
    """models(*turns) -> the scripted server, configured as both roles' model."""

    def start(*turns):
        server = scripted(list(turns), api_key=TEST_KEY)
        settings.ANTHROPIC_API_KEY, settings.ANTHROPIC_BASE_URL = TEST_KEY, server.url
        settings.LLM_MAX_RETRIES = 0
        for role in ("tool_builder", "tool_auditor"):
            ModelConfig.objects.update_or_create(role=role, defaults={"provider": "anthropic", "model": "claude-test"})
        return server

    return start


@pytest.fixture
def build(registry):
    """build(name, request, **context) -> build_custom_tool's result, for tenant acme."""

    def run(name: str, request: str = "Take an integer n and return n plus one.", **context):
        return registry.execute_tool(
            "build_custom_tool", {"name": name, "request": request}, ToolContext(**{"tenant_id": "acme", **context})
        )

    return run
