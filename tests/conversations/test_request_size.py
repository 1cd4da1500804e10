"""A request's size is estimated from sizes measured once per snapshot, to the character."""

import json

import pytest

from conversations.prompt import TokenEstimator
from tests import handlers

pytestmark = pytest.mark.django_db


def as_sent(tools) -> int:
    return len(json.dumps(tools, ensure_ascii=False, default=str))


def test_the_tools_arrays_size_is_the_length_of_the_json_the_provider_receives(registry, make_tool):
    make_tool("météo", handlers.echo, description="Le temps qu'il fait — «maintenant».")
    offered = list(registry.definitions().values())
    assert len(offered) > 40

    for some in (offered, offered[:1], []):
        assert TokenEstimator.array_chars([d.llm_chars for d in some]) == as_sent([d.llm_tool for d in some])


def test_a_tool_is_offered_with_the_schema_the_model_reads(registry):
    plan = registry.definitions()["plan"]
    assert plan.llm_tool == {"name": "plan", "description": plan.description, "input_schema": plan.llm_schema}
