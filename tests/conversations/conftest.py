"""A scripted model behind the real anthropic SDK, and a signed-up user with a conversation."""

import pytest
from django.contrib.auth import get_user_model

from conversations.models import Conversation
from llm.models import ModelConfig
from llm.scripted import ScriptedMessagesServer
from registry.models import TenantMembership
from tests.conftest import TENANT

TEST_KEY = "sk-ant-test-0123456789abcdef"


@pytest.fixture
def model(settings):
    """model(turns) -> a started scripted server that the chat role talks to."""
    servers = []

    def start(turns, **options):
        server = ScriptedMessagesServer(turns, **options).start()
        servers.append(server)
        settings.ANTHROPIC_API_KEY = TEST_KEY
        settings.ANTHROPIC_BASE_URL = server.url
        settings.LLM_MAX_RETRIES = 0
        ModelConfig.objects.update_or_create(
            role="chat",
            defaults={
                "provider": "anthropic",
                "model": "claude-test",
                "max_output_tokens": 1024,
                "input_price_per_mtok": 3,
                "output_price_per_mtok": 15,
            },
        )
        return server

    yield start
    for server in servers:
        server.stop()
    for server in servers:
        assert server.failures == [], server.failures


@pytest.fixture
def user():
    user = get_user_model().objects.create_user("ann", password="pw")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    return user


@pytest.fixture
def conversation(user):
    return Conversation.objects.create(tenant_id=TENANT, user=user, title="Weather")


def weather(inputs, context):
    return f"{inputs['city']}: 14°C, light rain"


WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.fixture
def weather_tool(make_tool, conversation):
    """A weather tool, already paged into the conversation's working set."""
    from conversations.models import WorkingSetEntry

    make_tool("weather", weather, input_schema=WEATHER_SCHEMA, status_message="Checking the weather")
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="weather")
