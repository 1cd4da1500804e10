"""The result budget: an oversize tool result is kept whole as a dataset (a handle) with a
preview and its true size, [CURRENT_STATE] lists the handle on every later call, and a long
result read on an earlier turn is replayed compacted (issue 41)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.core.exceptions import ImproperlyConfigured

from conversations.loop import run_turn
from conversations.models import WorkingSetEntry
from datacatalog.store import ConversationCatalog
from eunice.env import env_caps
from registry.context import ToolContext
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)

LINES = 3000


def long_read(inputs, context):
    return "\n".join(f"entry {n}: the measured value is {n * 7}" for n in range(1, LINES + 1))


@pytest.fixture
def reader(make_tool, conversation, settings, tmp_path):
    settings.EUNICE_FILES_DIR = tmp_path / "files"
    settings.RESULT_BUDGET_PER_TOOL = {"long_read": 500}
    make_tool("long_read", long_read)
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="long_read")


def run(conversation, user, text):
    return async_to_sync(run_turn)(conversation, text=text, user=user)


def last_user_text(request) -> str:
    blocks = request.messages[-1]["content"]
    return "\n".join(block.get("text", "") for block in blocks if block.get("type") == "text")


def tool_result(request) -> str:
    return next(b["content"] for b in request.messages[-1]["content"] if b.get("type") == "tool_result")


def read_once(model, conversation, user):
    server = model(
        [
            {"tool_uses": [{"name": "long_read", "input": {}, "id": "toolu_read1"}]},
            {
                "text": ["Read it."],
                "expect": {"tool_result_contains": "kept whole as dataset `long_read_result_read1`"},
            },
        ]
    )
    run(conversation, user, "read the long thing")
    return server


def test_an_oversize_result_is_kept_whole_as_a_dataset_and_the_model_reads_a_preview(reader, model, conversation, user):
    server = read_once(model, conversation, user)
    seen = tool_result(server.requests[1])
    assert f"{LINES + 1:,} lines" in seen and "over its cap of 500" in seen  # and the `✓ ok.` line
    assert "entry 1: the measured value is 7" in seen and f"entry {LINES}:" not in seen
    assert len(seen) < 500 * 3  # a quarter of the cap's characters, and the note
    held = ConversationCatalog(TENANT, conversation.pk).load("long_read_result_read1")
    assert len(held) == LINES + 1 and held["text"].iloc[-1] == f"entry {LINES}: the measured value is {LINES * 7}"


def test_the_handle_is_listed_in_current_state_on_later_turns_and_reads_by_line(
    reader, model, conversation, user, registry
):
    read_once(model, conversation, user)
    later = model([{"text": ["Still here."]}])
    run(conversation, user, "what do you hold?")
    assert "held results (query them by name): long_read_result_read1 (long_read," in last_user_text(later.requests[0])

    context = ToolContext(tenant_id=TENANT, user_id=str(user.pk), conversation_id=conversation.pk)
    sql = "SELECT text FROM long_read_result_read1 WHERE line = 2501"  # line 1 is the status line
    answered = registry.execute_tool("query", {"sql": sql}, context)
    assert "entry 2500: the measured value is 17500" in answered.content


def test_a_result_of_one_huge_line_is_held_in_parts_that_each_read_back(reader, model, conversation, user, make_tool):
    # minified JSON: one line of ~120,000 characters, which a line-per-row handle would
    # give back whole to any query that names it
    values = ",".join(f'{{"id":{n},"reading":{n * 3}}}' for n in range(5000))
    make_tool("one_line_json", lambda inputs, context: f"[{values}]")
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="one_line_json")
    model(
        [
            {"tool_uses": [{"name": "one_line_json", "input": {}, "id": "toolu_json1"}]},
            {
                "text": ["Read it."],
                "expect": {"tool_result_contains": "kept whole as dataset `one_line_json_result_json1`"},
            },
        ]
    )
    run(conversation, user, "fetch the readings")
    held = ConversationCatalog(TENANT, conversation.pk).load("one_line_json_result_json1")
    body = held[held["line"] == 2].sort_values("part")
    assert body["text"].str.len().max() <= 2_000 and len(body) > 50
    assert "".join(body["text"]) == f"[{values}]"


def test_a_result_within_its_cap_reaches_the_model_whole(reader, model, conversation, user, settings):
    settings.RESULT_BUDGET_PER_TOOL = {"long_read": 100_000}
    server = model(
        [
            {"tool_uses": [{"name": "long_read", "input": {}, "id": "toolu_read1"}]},
            {"text": ["Read it."], "expect": {"tool_result_contains": f"entry {LINES}: the measured value"}},
        ]
    )
    run(conversation, user, "read the long thing")
    assert "result budget" not in tool_result(server.requests[1])
    assert "long_read_result_read1" not in ConversationCatalog(TENANT, conversation.pk).names()


def test_a_long_result_read_on_an_earlier_turn_is_replayed_compacted(reader, model, conversation, user, settings):
    settings.RESULT_BUDGET_PER_TOOL = {"long_read": 100_000}
    model(
        [
            {"tool_uses": [{"name": "long_read", "input": {}, "id": "toolu_read1"}]},
            {"text": ["Read it."]},
        ]
    )
    run(conversation, user, "read the long thing")
    later = model([{"text": ["Done."]}])
    run(conversation, user, "thanks")
    replayed = [
        block["content"]
        for message in later.requests[0].messages
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    assert len(replayed) == 1 and "[compacted:" in replayed[0] and len(replayed[0]) < 2_500


def test_a_per_tool_cap_that_is_not_tool_equals_tokens_is_refused(monkeypatch):
    monkeypatch.setenv("EUNICE_RESULT_BUDGET_PER_TOOL", "fetch_url=3000,web_search")
    with pytest.raises(ImproperlyConfigured, match="'web_search' is not tool=tokens"):
        env_caps("EUNICE_RESULT_BUDGET_PER_TOOL", minimum=100)
    monkeypatch.setenv("EUNICE_RESULT_BUDGET_PER_TOOL", "fetch_url=3000, web_search=5000")
    assert env_caps("EUNICE_RESULT_BUDGET_PER_TOOL", minimum=100) == {"fetch_url": 3000, "web_search": 5000}
