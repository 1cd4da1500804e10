"""End to end: upload a CSV, then preview, query, chart and export through the dispatcher;
and the same tools through `manage.py call_tool`."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from conversations.dispatcher import dispatch_tool_calls
from conversations.models import ChatMessage, ConversationEvent, Notification
from conversations.state import DispatchState
from conversations.turns import begin_turn, finish_turn
from datacatalog.models import GeneratedFile
from datacatalog.uploads import upload_dataset
from tests.data.conftest import SALES_CSV

pytestmark = pytest.mark.django_db(transaction=True)


def block(name, index, **inputs):
    return {"id": f"toolu_{name}_{index}", "name": name, "input": inputs}


def test_upload_preview_query_chart_and_export_in_one_conversation(conversation, django_user_model):
    user = django_user_model.objects.create_user("ann")
    runtime = begin_turn(conversation, user=user, user_message="chart my sales")
    upload_dataset(runtime.catalog, "sales.csv", SALES_CSV)
    state = DispatchState.for_conversation(conversation)
    try:
        dispatch = async_to_sync(dispatch_tool_calls)
        first = dispatch(
            [
                block("preview_data", 1, dataset="sales"),
                block("query", 2, sql="SELECT region, sum(units) AS units FROM sales GROUP BY 1", save_as="by_region"),
            ],
            runtime,
            state,
        )
        second = dispatch(
            [
                block("create_chart", 3, dataset="by_region", x="region", y="units"),
                block("export", 4, dataset="by_region"),
                block("display_map", 5, dataset="sales", display_id="m"),
                block("display_map", 6, dataset="sales", display_id="m", layer="again"),
            ],
            runtime,
            state,
        )
    finally:
        state.cancel.release()
    assert all(d.result.error is None for d in first + second), [d.result.content for d in first + second]
    assert "by_region" in runtime.datasets
    finish_turn(runtime, "Here is your chart.")
    cards = ChatMessage.objects.get(role="assistant").cards
    assert [c["type"] for c in cards] == ["chart", "file_download", "file_download", "map_display"]
    assert len(cards[-1]["layers"]) == 2
    # Each export is one GeneratedFile (the tool's own row, reused), with an event and a notification.
    assert GeneratedFile.objects.filter(conversation=conversation).count() == 2
    assert ConversationEvent.objects.filter(conversation=conversation, event_type="export").count() == 2
    assert Notification.objects.filter(kind="export.ready", user=user).count() == 2


def test_the_tools_run_through_call_tool(conversation, capsys):
    from datacatalog.store import ConversationCatalog

    upload_dataset(ConversationCatalog(conversation.tenant_id, conversation.id), "sales.csv", SALES_CSV)
    common = ["--tenant", conversation.tenant_id, "--conversation", conversation.id]
    call_command("call_tool", "preview_data", "--input", '{"dataset": "sales", "rows": 2}', *common)
    call_command("call_tool", "query", "--input", '{"sql": "SELECT count(*) AS n FROM sales"}', *common)
    call_command("call_tool", "export", "--input", '{"dataset": "sales", "format": "json"}', *common)
    out = capsys.readouterr().out
    assert "schema: region:" in out and "✓ ok. 1 row." in out and "sales.json" in out
    with pytest.raises(SystemExit):
        call_command("call_tool", "preview_data", "--input", "{}", "--tenant", conversation.tenant_id)
