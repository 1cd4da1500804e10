"""load_telemetry: the conversation's execution log or events (staff: the tenant's) kept as a
dataset of the conversation, which query then reads like any other; never another tenant's."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import Conversation, ConversationEvent
from registry.models import ToolExecutionLog
from tests.conftest import OTHER_TENANT, TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)


def table(result) -> list[str]:
    """The rows of a query's result as read: header first, cells joined by ' | '."""
    return text(result).splitlines()[1:]


def test_the_conversations_tool_calls_become_a_dataset_that_query_reads(sales, in_conversation):
    in_conversation("preview_data", dataset="sales")
    in_conversation("preview_data", dataset="nope")  # a hint: its outcome is kept too
    in_conversation("describe_entry", name="sales")

    loaded = in_conversation("load_telemetry")
    counted = in_conversation(
        "query",
        sql="SELECT tool_name, outcome, count(*) AS calls FROM telemetry_tool_calls GROUP BY 1, 2 ORDER BY 1, 2",
    )

    assert loaded.error is None, loaded.content
    assert "3 rows" in loaded.content and "saved as dataset 'telemetry_tool_calls'" in loaded.content
    assert table(counted) == [
        "tool_name | outcome | calls",
        "describe_entry | ok | 1",
        "preview_data | hint | 1",
        "preview_data | ok | 1",
    ]


def test_the_conversations_events_become_a_dataset_with_their_common_fields(conversation, in_conversation):
    for sequence, (kind, data) in enumerate(
        [
            ("user_message", {"text": "hi"}),
            ("tool_call", {"name": "preview_data", "tool_use_id": "t1"}),
            ("tool_result", {"name": "preview_data", "tool_use_id": "t1", "content": "✓ ok"}),
            ("subtask_finished", {"subtask": "1", "stop_reason": "end_turn", "cost_usd": 0.01}),
        ],
        1,
    ):
        ConversationEvent.objects.create(
            conversation=conversation, turn=1, sequence=sequence, event_type=kind, data=data
        )

    loaded = in_conversation("load_telemetry", what="events", save_as="events")
    tools = in_conversation("query", sql="SELECT event_type, name FROM events WHERE name IS NOT NULL ORDER BY sequence")
    costs = in_conversation("query", sql="SELECT subtask, cost_usd FROM events WHERE event_type = 'subtask_finished'")

    assert loaded.error is None and "4 rows" in loaded.content
    assert table(tools) == ["event_type | name", "tool_call | preview_data", "tool_result | preview_data"]
    assert table(costs) == ["subtask | cost_usd", "1 | 0.01"]


def test_the_tenants_telemetry_is_for_staff_and_never_another_tenants(
    sales, in_conversation, other_conversation, django_user_model
):
    colleague = Conversation.objects.create(id="conv-colleague", tenant_id=TENANT)
    in_conversation("preview_data", context={"conversation_id": colleague.id}, dataset="x")
    in_conversation("preview_data", tenant=OTHER_TENANT, context={"conversation_id": other_conversation.id})
    member = {"user_id": str(django_user_model.objects.create_user("ann").pk)}
    staff = {"user_id": str(django_user_model.objects.create_user("ops", is_staff=True).pk)}

    refused = in_conversation("load_telemetry", context=member, scope="tenant")
    loaded = in_conversation("load_telemetry", context=staff, scope="tenant")
    where = in_conversation("query", sql="SELECT DISTINCT tenant_id, conversation_id FROM telemetry_tool_calls")

    assert refused.error and "scope 'tenant' is for staff" in refused.content
    assert loaded.error is None, loaded.content
    assert "conv-colleague" in text(where) and OTHER_TENANT not in text(where)
    assert "conv-colleague" not in text(in_conversation("load_telemetry", save_as="mine"))


def test_within_days_keeps_only_the_recent_calls(sales, in_conversation):
    in_conversation("preview_data", dataset="sales")
    in_conversation("describe_entry", name="sales")
    ToolExecutionLog.objects.filter(tool_name="preview_data").update(created_at=timezone.now() - timedelta(days=3))

    recent = in_conversation("load_telemetry", within_days=1, save_as="recent")
    week = in_conversation("load_telemetry", within_days=7, save_as="week")

    assert table(in_conversation("query", sql="SELECT tool_name FROM recent")) == ["tool_name", "describe_entry"]
    assert recent.content.startswith("✓ ok. 1 row.") and "| preview_data |" in text(week)


def test_a_bad_dataset_name_is_a_hint_naming_save_as(conversation, in_conversation):
    result = in_conversation("load_telemetry", save_as="my telemetry")
    assert result.content.startswith("⚠ schema hint: save_as: dataset name 'my telemetry' is invalid")


def test_outside_a_conversation_there_is_nowhere_to_keep_it(call):
    result = call("load_telemetry")
    assert result.error and "need a conversation" in result.content
