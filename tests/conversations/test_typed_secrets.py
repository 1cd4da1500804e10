"""A secret typed in a slash command reaches its tool, and is stored nowhere: not in the message,
the user_message or tool_call event, the assistant's stored tool call, nor the turn record."""

import json

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from conversations.loop import run_turn
from conversations.models import ChatMessage, Conversation, ConversationEvent, TurnRecord
from conversations.replay import replay
from registry.models import TenantMembership, ToolExecutionLog
from registry.snapshot import REDACTED, redact_command
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "hunter2-typed-in-chat"
LOGIN_SCHEMA = {
    "type": "object",
    "properties": {"user": {"type": "string"}, "password": {"type": "string", "writeOnly": True}},
}


def everything_stored(conversation) -> str:
    """Every stored row of the conversation that could hold what the user typed, as one text."""
    rows = [
        list(ChatMessage.objects.filter(conversation=conversation).values("text", "structured_content", "cards")),
        list(ConversationEvent.objects.filter(conversation=conversation).values("event_type", "data")),
        list(TurnRecord.objects.filter(conversation=conversation).values("effects")),
        list(ToolExecutionLog.objects.filter(conversation_id=conversation.pk).values("input_data", "output_summary")),
    ]
    return json.dumps(rows, default=str)


def person(name, tenant, **flags):
    user = get_user_model().objects.create_user(name, **flags)
    TenantMembership.objects.create(user=user, tenant_id=tenant)
    return user


@pytest.fixture
def login_tool(make_tool):
    """A tool with a write-only password that notes what it was given."""
    received = []

    def login(inputs, context):
        received.append(inputs["password"])
        return f"signed in as {inputs['user']}"

    make_tool("login", login, input_schema=LOGIN_SCHEMA)
    return received


@pytest.mark.parametrize(("who", "tenant"), [("staff_a", TENANT), ("ann_a", TENANT), ("bob_b", OTHER_TENANT)])
def test_the_tool_gets_the_typed_password_and_no_stored_row_keeps_it(login_tool, who, tenant):
    user = person(who, tenant, is_staff=who.startswith("staff"))
    conversation = Conversation.objects.create(tenant_id=tenant, user=user)
    command = f'/login {{"user": "ann", "password": "{SECRET}"}}'

    outcome = async_to_sync(run_turn)(conversation, text=command, user=user)

    assert login_tool == [SECRET] and "signed in as ann" in outcome.text
    stored = everything_stored(conversation)
    assert SECRET not in stored
    message = ChatMessage.objects.get(conversation=conversation, role="user")
    assert json.loads(message.text.removeprefix("/login ")) == {"user": "ann", "password": REDACTED}
    event = ConversationEvent.objects.get(conversation=conversation, event_type="user_message")
    assert event.data["text"] == message.text
    report = replay(conversation)
    assert report.identical, report.first_difference


def test_a_staff_members_register_datasource_password_never_shows_in_get_events(tmp_path):
    staff = person("staff_a", TENANT, is_staff=True)
    api = APIClient()
    api.force_authenticate(staff)
    conversation = api.post("/api/conversations/", {"title": "db"}, format="json").json()["id"]
    command = "/register_datasource " + json.dumps(
        {"name": "sales", "kind": "sqlite", "path": str(tmp_path / "none.sqlite3"), "password": SECRET}
    )

    assert api.post(f"/api/conversations/{conversation}/messages/", {"text": command}, format="json").status_code == 201

    events = api.get(f"/api/conversations/{conversation}/events/").content.decode()
    messages = api.get(f"/api/conversations/{conversation}/messages/").content.decode()
    assert "register_datasource" in events and SECRET not in events and SECRET not in messages
    assert SECRET not in everything_stored(Conversation.objects.get(pk=conversation))


@pytest.mark.parametrize(
    "typed",
    [
        f'/login {{"password": "{SECRET}", "user": "ann"',  # not valid JSON: the name alone is kept
        f'/login ["{SECRET}"]',  # not an object
        "/login " + "[" * 20_000 + f'"{SECRET}"' + "]" * 20_000,  # nested past the depth limit: never a RecursionError
    ],
)
def test_a_malformed_command_to_a_tool_with_secrets_keeps_only_its_name(login_tool, registry, typed):
    assert redact_command(typed, registry.definitions) == f"/login {REDACTED}"


@pytest.mark.parametrize("typed", ["hello", '/login {"user": "ann"}', '/search_tools {"query": "password"}', "/nope {"])
def test_text_without_a_secret_is_stored_as_typed(login_tool, registry, typed):
    assert redact_command(typed, registry.definitions) == typed
