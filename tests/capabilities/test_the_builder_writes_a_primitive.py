"""Without code, create_primitive asks the builder model (a scripted Messages API server) for it."""

from __future__ import annotations

import pytest

from llm.models import ModelConfig
from tests.capabilities.test_primitives import CELSIUS
from tests.conftest import text
from tests.llm.conftest import TEST_KEY, _no_hosted_model, scripted  # noqa: F401 - shared fixtures
from tools.models import Primitive

pytestmark = pytest.mark.django_db(transaction=True)

WITHOUT_CODE = {key: value for key, value in CELSIUS.items() if key != "code"}


@pytest.fixture
def builder(scripted, settings):  # noqa: F811
    def start(reply: str):
        turn = {"text": reply, "expect": {"system_contains": "You write custom tools", "stream": False}}
        server = scripted([turn], api_key=TEST_KEY)
        settings.ANTHROPIC_API_KEY, settings.ANTHROPIC_BASE_URL = TEST_KEY, server.url
        settings.LLM_MAX_RETRIES = 0
        ModelConfig.objects.update_or_create(role="tool_builder", defaults={"provider": "anthropic", "model": "x"})
        return server

    return start


PROPOSAL = (
    '{"description": "Celsius to Fahrenheit.", "input_schema": {"type": "object", "properties": '
    '{"celsius": {"type": "number"}}}, "code": "result = inputs[\'celsius\'] * 9 / 5 + 32", '
    '"dependencies": [], "test_cases": [{"inputs": {"celsius": 100}, "expect": "212"}]}'
)


def test_the_builders_code_is_stored_and_run_on_the_examples(builder, tool, custom_tools_on):
    server = builder(PROPOSAL)
    made = text(tool("create_primitive", WITHOUT_CODE, staff=True))
    assert made.startswith("Primitive celsius_to_fahrenheit: 3 of 3 example(s) pass.")
    assert Primitive.objects.get().code == "result = inputs['celsius'] * 9 / 5 + 32"
    asked = server.requests[0].messages[0]["content"]
    assert "Convert a temperature from degrees Celsius" in str(asked) and '"output": 212' in str(asked)


def test_a_builder_reply_that_is_not_a_proposal_is_a_hint_to_pass_the_code(builder, tool, custom_tools_on):
    builder("I would rather not.")
    hint = tool("create_primitive", WITHOUT_CODE, staff=True)
    assert hint.content.startswith("⚠ schema hint: code: none given and the builder could not write it")
    assert not Primitive.objects.exists()
