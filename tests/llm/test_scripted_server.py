import json
import os
import subprocess
import sys
from pathlib import Path

import anthropic
import openai
import pytest

from llm.scripted import load_script
from tests.llm.conftest import TEST_KEY, request

ROOT = Path(__file__).resolve().parents[2]


def test_the_sdk_really_talks_http_to_the_scripted_server(scripted, provider_for):
    server = scripted([{"text": "hi"}])
    tools = [{"name": "plan", "description": "Plan.", "input_schema": {"type": "object"}}]
    provider_for(server).complete(request("Hello", system="You are Eunice.", tools=tools))
    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert "anthropic-version" in sent.headers and sent.api_key == TEST_KEY
    assert sent.body["model"] == "claude-test" and sent.body["max_tokens"] == 256
    assert [t["name"] for t in sent.tools] == ["plan"]
    assert sent.system[0]["text"] == "You are Eunice."


def test_a_missed_expectation_is_answered_400_and_recorded(scripted, client_for):
    server = scripted([{"text": "x", "expect": {"tool_result_contains": "42", "system_contains": "Eunice"}}])
    client = client_for(server)
    with pytest.raises(anthropic.BadRequestError, match="scripted expectation failed"):
        client.messages.create(model="m", max_tokens=5, system="Hi", messages=[{"role": "user", "content": "q"}])
    assert server.failures == [
        "turn 1: the last tool_result does not contain '42' (it reads ''); the system prompt does not contain 'Eunice'"
    ]
    server.failures.clear()


def test_a_request_beyond_the_script_fails_instead_of_looping(scripted, client_for):
    server = scripted([{"text": "only one"}])
    client = client_for(server)
    client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "1"}])
    with pytest.raises(anthropic.InternalServerError):
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "2"}])
    assert server.failures == ["request 2 arrived after all 1 turns were used"]
    server.failures.clear()


def test_a_tool_use_left_without_its_tool_result_is_refused_like_the_real_api(scripted, client_for):
    server = scripted([{"text": "never"}])
    client = client_for(server)
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "plan", "input": {}}]},
        {"role": "user", "content": "and?"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="without tool_result"):
        client.messages.create(model="m", max_tokens=5, messages=history)
    assert server.turns_left == 1
    server.failures.clear()


@pytest.mark.parametrize(
    ("history", "refusal"),
    [
        (
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": []}, {"role": "user", "content": "?"}],
            "messages.1: all messages must have non-empty content except for the optional final assistant message",
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": ""}]}],
            "messages.0: text content blocks must be non-empty",
        ),
        (
            [{"role": "user", "content": "hi"}, {"role": "user", "content": "again"}],
            'roles must alternate between "user" and "assistant", but found multiple "user" roles in a row',
        ),
        (
            [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "go"}],
            'first message must use the "user" role',
        ),
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}]}],
            "unexpected `tool_use_id` found in `tool_result` blocks: t9",
        ),
    ],
    ids=["empty-message", "empty-text-block", "two-user-turns", "assistant-first", "stray-tool-result"],
)
def test_a_history_the_real_api_refuses_is_answered_400_invalid_request(scripted, client_for, history, refusal):
    server = scripted([{"text": "never"}])
    with pytest.raises(anthropic.BadRequestError) as refused:
        client_for(server).messages.create(model="m", max_tokens=5, messages=history)
    assert refused.value.body["error"]["type"] == "invalid_request_error"
    assert refusal in refused.value.body["error"]["message"]
    assert server.turns_left == 1
    server.failures.clear()


def test_an_empty_final_assistant_turn_is_accepted_as_a_prefill(scripted, client_for):
    server = scripted([{"text": "ok"}])
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": []}]
    assert client_for(server).messages.create(model="m", max_tokens=5, messages=history).content[0].text == "ok"


def test_a_script_with_an_unknown_key_is_refused_naming_it():
    with pytest.raises(ValueError, match="unknown turn key"):
        load_script([{"txt": "typo"}])
    with pytest.raises(ValueError, match="at least one turn"):
        load_script({"turns": []})


def _hello(api: str, url: str) -> str:
    hello = [{"role": "user", "content": "hi"}]
    if api == "chat":
        with openai.OpenAI(api_key="anything", base_url=url, max_retries=0) as client:
            chunks = client.chat.completions.create(model="demo", messages=hello, stream=True)
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    if api == "responses":
        with openai.OpenAI(api_key="anything", base_url=url, max_retries=0) as client:
            events = client.responses.create(model="demo", input="hi", stream=True)
            return "".join(e.delta for e in events if e.type == "response.output_text.delta")
    with anthropic.Anthropic(api_key="anything", base_url=url, max_retries=0) as client:
        with client.messages.stream(model="demo", max_tokens=10, messages=hello) as stream:
            return stream.get_final_text()


BANNERS = [
    ("messages", "Scripted Messages API"),
    ("chat", "Scripted Chat Completions API"),
    ("responses", "Scripted Responses API"),
]


@pytest.mark.parametrize(("api", "banner"), BANNERS)
def test_the_fake_model_server_command_serves_a_script_file(tmp_path, api, banner):
    script = tmp_path / "demo.json"
    script.write_text(json.dumps({"turns": [{"text": ["Hello ", "from the script."]}]}))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "eunice.test_settings", "PYTHONUNBUFFERED": "1"}
    command = [
        sys.executable,
        "manage.py",
        "fake_model_server",
        "--script",
        str(script),
        "--port",
        "0",
        "--max-requests",
        "1",
        "--api",
        api,
    ]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first_line = process.stdout.readline()
        assert first_line.startswith(f"{banner} on http://127.0.0.1:"), first_line
        url = first_line.split(" on ")[1].split()[0]
        assert _hello(api, url) == "Hello from the script."
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "Answered 1 requests; 0 turns left." in out


def test_a_thinking_block_sent_back_changed_is_refused_like_the_real_api(scripted, client_for):
    server = scripted([{"text": "never"}])
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "edited", "signature": "sig-forged"}]},
        {"role": "user", "content": "and?"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature` in `thinking` block"):
        client_for(server).messages.create(model="m", max_tokens=5, messages=history)
    server.failures.clear()


def test_a_tool_loop_without_its_thinking_is_refused_when_thinking_is_on(scripted, client_for):
    server = scripted([{"text": "never"}])
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "plan", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]
    with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
        client_for(server).messages.create(
            model="m", max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 1024}, messages=history
        )
    server.failures.clear()


def test_a_request_past_the_context_window_is_refused_as_too_long(scripted, provider_for):
    from llm import LLMContextTooLongError

    server = scripted([{"text": "never"}], context_tokens=10, chars_per_token=2.0)
    with pytest.raises(LLMContextTooLongError) as refused:
        provider_for(server).complete(request("x" * 100))
    assert refused.value.prompt_tokens > refused.value.limit == 10
    assert server.turns_left == 1


def test_a_tool_call_cut_by_max_tokens_is_reported_not_raised(scripted, provider_for):
    server = scripted([{"text": "Sure.", "tool_uses": [{"name": "plan", "input": {"steps": ["a", "b"]}, "cut": True}]}])
    response = list(provider_for(server).stream(request("plan")))[-1].response
    assert (response.stop_reason, response.cut_tool_uses, response.text) == ("max_tokens", ("plan",), "Sure.")
    assert response.tool_uses == []
