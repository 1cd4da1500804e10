"""Tools that use the model or the loop: call_llm, delegate, delegate_batch, request_user_input."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from conversations.loop import run_turn
from conversations.models import UsageLog
from tests.conversations.test_websocket import cookie_for, receive_until_done, socket

pytestmark = pytest.mark.django_db(transaction=True)


def run(conversation, user, text, **kwargs):
    return async_to_sync(run_turn)(conversation, text=text, user=user, **kwargs)


def offer(conversation, *names):
    """Page tools into the conversation's working set: a model may call only tools it is offered."""
    from conversations.models import WorkingSetEntry

    for name in names:
        WorkingSetEntry.objects.create(conversation=conversation, tool_name=name)


def test_call_llm_answers_a_one_off_prompt_and_reports_its_cost(model, call):
    model([{"text": ["Bonjour."], "usage": {"input_tokens": 100, "output_tokens": 10}}])
    result = call("call_llm", prompt="Say hello in French.")
    assert result.content == "✓ ok. 1 row.\nBonjour."
    assert result.cost == pytest.approx(100 * 3e-6 + 10 * 15e-6)


def test_delegate_runs_a_helper_and_returns_its_report(model, conversation, user):
    server = model(
        [
            {"tool_uses": [{"name": "delegate", "input": {"task": "Find the capital of Norway."}, "id": "t1"}]},
            {
                "text": ["Oslo."],
                "usage": {"input_tokens": 50, "output_tokens": 5},
                "expect": {"user_text_contains": "Find the capital of Norway."},
            },
            {"text": ["The capital is Oslo."], "expect": {"tool_result_contains": "Oslo."}},
        ]
    )
    conversation.mode = "agentic"
    conversation.save()
    outcome = run(conversation, user, "What is the capital of Norway? Delegate it.")
    assert outcome.text == "The capital is Oslo."
    helper_request = server.requests[1]
    assert len(helper_request.messages) == 1  # the helper does not see the conversation
    assert "delegate" not in [t["name"] for t in helper_request.tools]  # delegate mode: no recursion offered


def test_a_delegated_task_runs_on_the_delegate_roles_model_when_it_has_one(model, conversation, user):
    from llm.models import ModelConfig
    from llm.scripted import ScriptedChatCompletionsServer

    offer(conversation, "delegate")
    chat = model(
        [
            {"tool_uses": [{"name": "delegate", "input": {"task": "Find the capital of Norway."}, "id": "t1"}]},
            {"text": ["The capital is Oslo."], "expect": {"tool_result_contains": "Oslo."}},
        ]
    )
    with ScriptedChatCompletionsServer([{"text": ["Oslo."]}]) as helper:
        ModelConfig.objects.create(role="delegate", provider="openai", model="small-helper", base_url=helper.url)
        outcome = run(conversation, user, "What is the capital of Norway? Delegate it.")
    assert outcome.text == "The capital is Oslo."
    assert (len(chat.requests), len(helper.requests)) == (2, 1)
    assert helper.requests[0].body["model"] == "small-helper"
    assert helper.failures == []


def test_a_delegated_cost_is_counted_once(model, conversation, user):
    offer(conversation, "delegate")
    model(
        [
            {
                "tool_uses": [{"name": "delegate", "input": {"task": "t"}, "id": "t1"}],
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
            {"text": ["done"], "usage": {"input_tokens": 1000, "output_tokens": 100}},
            {"text": ["ok"], "usage": {"input_tokens": 10, "output_tokens": 1}},
        ]
    )
    run(conversation, user, "go")
    assert UsageLog.objects.filter(kind="tool", name="delegate").count() == 0
    assert UsageLog.objects.filter(kind="llm").count() == 3


def test_delegate_batch_runs_tasks_and_reports_each(model, conversation, user):
    offer(conversation, "delegate_batch")
    from conversations.recording import ListDisplay

    model(
        [
            {"tool_uses": [{"name": "delegate_batch", "input": {"tasks": ["one", "two"]}, "id": "t1"}]},
            {"text": ["first report"]},
            {"text": ["second report"]},
            {"text": ["Both done."], "expect": {"tool_result_contains": "## Task 2: two"}},
        ]
    )
    display = ListDisplay()
    assert run(conversation, user, "do both", display=display).text == "Both done."
    progress = [(c["message"], c["fraction"]) for c in display.chunks if c["type"] == "progress"]
    assert progress == [("1 of 2 tasks finished", 0.5), ("2 of 2 tasks finished", 1.0)]


def test_request_user_input_without_a_person_says_so(model, conversation, user):
    offer(conversation, "request_user_input")
    model(
        [
            {"tool_uses": [{"name": "request_user_input", "input": {"question": "Which city?"}, "id": "t1"}]},
            {"text": ["I'll assume Oslo."], "expect": {"tool_result_contains": "NotInteractive"}},
        ]
    )
    assert run(conversation, user, "weather?").text == "I'll assume Oslo."


async def question_asked(conversation, user, text: str):
    """Send ``text`` on the conversation's socket and read up to the question it leads to."""
    ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
    await ws.connect()
    await ws.send_json_to({"type": "message", "text": text})
    while (chunk := await ws.receive_json_from(timeout=10))["type"] != "question":
        pass
    return ws, chunk


def test_request_user_input_asks_over_the_websocket_and_resumes_with_the_answer(model, conversation, user):
    offer(conversation, "request_user_input")
    model(
        [
            {
                "tool_uses": [
                    {
                        "name": "request_user_input",
                        "input": {"question": "Which city?", "choices": ["Oslo", "Bergen"]},
                        "id": "t1",
                    }
                ]
            },
            {"text": ["Bergen it is."], "expect": {"tool_result_contains": "The user answered: Bergen"}},
        ]
    )

    async def chat():
        ws, chunk = await question_asked(conversation, user, "weather?")
        assert (chunk["text"], chunk["choices"]) == ("Which city?", ["Oslo", "Bergen"])
        await ws.send_json_to({"type": "answer", "question_id": chunk["question_id"], "text": "Bergen"})
        chunks = await receive_until_done(ws)
        await ws.disconnect()
        return "".join(c.get("text", "") for c in chunks if c["type"] == "text_delta")

    assert async_to_sync(chat)() == "Bergen it is."


def test_a_question_waiting_for_its_answer_is_drawn_again_until_it_is_answered(model, conversation, user):
    from conversations.timeline import timeline

    offer(conversation, "request_user_input")
    model(
        [
            {"tool_uses": [{"name": "request_user_input", "input": {"question": "Which city?"}, "id": "t1"}]},
            {"text": ["Bergen it is."], "expect": {"tool_result_contains": "The user answered: Bergen"}},
        ]
    )
    drawn = sync_to_async(timeline)  # what a reload of the page would show

    async def chat():
        ws, chunk = await question_asked(conversation, user, "weather?")
        waiting = (await drawn(conversation))[-2:]
        await ws.send_json_to({"type": "answer", "question_id": chunk["question_id"], "text": "Bergen"})
        rest = await receive_until_done(ws)
        await ws.disconnect()
        return chunk, waiting, rest, await drawn(conversation)

    asked, waiting, rest, after = async_to_sync(chat)()
    asked.pop("ts")  # when it was sent
    assert waiting == [asked, {"type": "running"}]
    assert not [c for c in after if c["type"] == "question"]
    assert settled(rest) == [{"type": "question_settled", "question_id": asked["question_id"], "answered": True}]


def settled(chunks: list[dict]) -> list[dict]:
    return [{k: v for k, v in c.items() if k != "ts"} for c in chunks if c["type"] == "question_settled"]


def test_a_question_nobody_answers_in_time_is_taken_off_the_page(model, conversation, user, settings):
    settings.EUNICE_QUESTION_TIMEOUT = 1.0
    offer(conversation, "request_user_input")
    model(
        [
            {"tool_uses": [{"name": "request_user_input", "input": {"question": "Which city?"}, "id": "t1"}]},
            {"text": ["I'll pick Oslo."], "expect": {"tool_result_contains": "no answer within 1 s"}},
        ]
    )

    async def chat():
        ws, chunk = await question_asked(conversation, user, "weather?")
        rest = await receive_until_done(ws)
        await ws.disconnect()
        return chunk, rest

    asked, rest = async_to_sync(chat)()
    assert settled(rest) == [{"type": "question_settled", "question_id": asked["question_id"], "answered": False}]
    assert "".join(c.get("text", "") for c in rest if c["type"] == "text_delta") == "I'll pick Oslo."


def test_in_agentic_mode_a_helper_that_stopped_early_is_put_back_to_the_model_once(model, conversation, user):
    from conversations.models import ConversationEvent

    model(
        [
            {
                "tool_uses": [
                    {"name": "delegate", "input": {"task": "Count the rivers.", "max_cost_usd": 0.0001}, "id": "t1"}
                ]
            },
            # The helper's first call would already cost more than its budget: it is never made.
            {"text": ["Here you go."], "expect": {"tool_result_contains": "stopped early (budget)"}},
            {
                "text": ["The helper ran out of budget, so the rivers are not counted."],
                "expect": {
                    "user_text_contains": "1 delegated task(s) stopped before finishing: 'Count the rivers.' (budget)"
                },
            },
        ]
    )
    conversation.mode = "agentic"
    conversation.save()

    outcome = run(conversation, user, "How many rivers? Delegate it.")

    assert outcome.text == "The helper ran out of budget, so the rivers are not counted."
    corrections = [e.data for e in ConversationEvent.objects.filter(event_type="correction")]
    assert corrections == [{"kind": "failed_delegation", "tasks": [{"task": "Count the rivers.", "stopped": "budget"}]}]
