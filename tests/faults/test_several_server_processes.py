"""Two server processes and two job clusters on PostgreSQL + Redis: one product.

Both servers run ``python -m eunice.serve`` (what scripts/run execs; EUNICE_JOBS=0)
on their own port, as two machines behind a load balancer would; two ``manage.py
jobs`` clusters share the Redis broker. The registry's fingerprint poll is set to an
hour (EUNICE_REGISTRY_POLL_SECONDS), so a change seen by the other process got
there by the push (eunice/bus.py), not by the poll.

Skipped without PostgreSQL and REDIS_URL: several processes share state only through them.
"""

import signal
import threading
import time

import pytest
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from rest_framework.authtoken.models import Token

from conversations.models import ChatMessage, Conversation, TurnRecord
from llm.models import ModelConfig
from llm.scripted.server import ScriptedMessagesServer
from registry.models import (
    ApprovalRule,
    ApprovalStatus,
    JobRun,
    PendingApproval,
    SeedLog,
    TenantMembership,
    ToolExecutionLog,
)
from tests.conftest import TENANT
from tests.faults.jobs_cast import START_SECONDS, start_cluster
from tests.faults.operator import Server, cookie_for, environment, wait_for
from tests.mcp.conftest import add_server, mcp

pytestmark = [
    pytest.mark.faults,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        connection.vendor != "postgresql" or not settings.REDIS_URL,
        reason="several server processes need PostgreSQL (DATABASE_URL) and Redis (REDIS_URL)",
    ),
]

KEY = "sk-ant-scripted-test"
BOUND = 15.0  # seconds: a push takes milliseconds; generous for a machine shared by many loads
JOBS = 20


@pytest.fixture(scope="module")
def model():
    server = ScriptedMessagesServer([{"text": ["Unused."]}], api_key=KEY).start()  # each test scripts its own
    yield server
    server.stop()


@pytest.fixture(scope="module")
def servers(model, django_db_setup, django_db_blocker):
    """Server processes A and B, started side by side (each start takes a while on a busy machine)."""
    env = environment(
        REDIS_URL=settings.REDIS_URL,
        ANTHROPIC_API_KEY=KEY,
        ANTHROPIC_BASE_URL=model.url,
        EUNICE_LLM_MAX_RETRIES="0",
        EUNICE_JOBS="0",
        EUNICE_TURN_RATE="10000/min",
        EUNICE_REGISTRY_POLL_SECONDS="3600",  # only a push can tell them of a change
        EUNICE_MAX_RUNS_PER_USER="1",
    )
    started: dict[str, Server] = {}
    with django_db_blocker.unblock():
        starters = [
            threading.Thread(target=lambda n=name: started.__setitem__(n, Server(env, name=f"server-{n}")))
            for name in ("a", "b")
        ]
        for starter in starters:
            starter.start()
        for starter in starters:
            starter.join()
    try:
        assert set(started) == {"a", "b"}, "a server process did not start"
        yield started["a"], started["b"]
    finally:
        for server in started.values():
            server.stop()


@pytest.fixture
def cast(model):
    """A user with an API token and a conversation; a staff member of the same tenant; the chat model."""
    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})
    users = get_user_model().objects
    ann = users.create_user("ann", password="pw")
    rita = users.create_user("rita", password="pw", is_staff=True)
    for user in (ann, rita):
        TenantMembership.objects.create(user=user, tenant_id=TENANT)
    conversation = Conversation.objects.create(tenant_id=TENANT, user=ann, title="Weather")
    yield {
        "conversation": conversation,
        "ann": {"Authorization": f"Token {Token.objects.create(user=ann).key}"},
        "rita": {"Authorization": f"Token {Token.objects.create(user=rita).key}"},
        "rita_cookie": cookie_for(rita),
    }
    model.resume()  # never leave a held stream for the next test


def post(server: Server, path: str, headers: dict, body: dict | None = None) -> requests.Response:
    return requests.post(f"{server.url}{path}", json=body or {}, headers=headers, timeout=120)


def test_a_cancel_sent_to_one_process_stops_the_turn_running_on_the_other(servers, model, cast):
    a, b = servers
    conversation = cast["conversation"]
    model.script([{"text": ["Held ", "answer."], "pause_after": 4}])  # streams a word, then waits
    replies: list[requests.Response] = []
    sender = threading.Thread(
        target=lambda: replies.append(
            post(b, f"/api/conversations/{conversation.pk}/messages/", cast["ann"], {"text": "hi"})
        )
    )
    sender.start()
    assert wait_for(lambda: model.requests, 120), "the turn on B never reached the model"

    cancelled = post(a, f"/api/conversations/{conversation.pk}/cancel/", cast["ann"])
    began = time.monotonic()
    sender.join(BOUND)

    assert cancelled.status_code == 202
    assert replies, f"B's turn was still running {BOUND:g} s after the cancel sent to A"
    assert replies[0].status_code == 201 and replies[0].json()["cancelled"] is True, replies[0].text
    assert time.monotonic() - began < BOUND
    assert TurnRecord.objects.get(conversation=conversation).status == TurnRecord.Status.FINISHED


def test_the_per_user_cap_counts_a_turn_running_on_the_other_process(servers, model, cast):
    a, b = servers
    first, second = cast["conversation"], Conversation.objects.create(tenant_id=TENANT, user=cast["conversation"].user)
    model.script([{"text": ["Held ", "answer."], "pause_after": 4}])
    sender = threading.Thread(
        target=lambda: post(b, f"/api/conversations/{first.pk}/messages/", cast["ann"], {"text": "hi"})
    )
    sender.start()
    assert wait_for(lambda: model.requests, 120), "the turn on B never reached the model"

    refused = post(a, f"/api/conversations/{second.pk}/messages/", cast["ann"], {"text": "and this?"})
    model.resume()
    sender.join(120)

    assert refused.status_code == 429, refused.text
    assert refused.json()["detail"] == "you already have 1 answers running; wait or cancel one"
    assert not ChatMessage.objects.filter(conversation=second).exists()  # nothing of it was stored


def test_the_next_message_is_offered_the_same_tools_whichever_process_serves_it(servers, model, cast):
    a, b = servers
    conversation = cast["conversation"]
    call_command("seed_tools", verbosity=0)  # the catalog, as a deploy seeds it: both processes are told
    model.script([{"text": ["One."]}, {"text": ["Two."]}])

    on_a = post(a, f"/api/conversations/{conversation.pk}/messages/", cast["ann"], {"text": "first"})
    on_b = post(b, f"/api/conversations/{conversation.pk}/messages/", cast["ann"], {"text": "second"})

    assert (on_a.status_code, on_b.status_code) == (201, 201), (on_a.text, on_b.text)
    offered = [sorted(tool["name"] for tool in request.tools) for request in model.requests]
    assert len(offered) == 2 and offered[0], offered
    assert offered[0] == offered[1]


def test_an_mcp_server_connected_on_one_process_is_callable_on_the_other_at_once(servers, model, cast, http_demo):
    a, b = servers
    conversation = cast["conversation"]
    model.script([{"text": ["Hello."]}])
    warmed = post(b, f"/api/conversations/{conversation.pk}/messages/", cast["ann"], {"text": "hi"})
    assert warmed.status_code == 201, warmed.text  # B has read the definitions: fresh for an hour
    server = add_server(
        "web", transport="streamable_http", command="", args=[], url=http_demo, allow_private_network=True
    )

    connected = post(a, f"/api/mcp/servers/{server.pk}/connect/", cast["rita"])
    assert connected.status_code == 200, connected.text
    ran = run_in_the_playground(b, cast["rita_cookie"], mcp("echo", "web"), '{"text": "from B"}')

    assert ran.status_code == 200, ran.text[-2000:]
    row = ToolExecutionLog.objects.filter(tool_name=mcp("echo", "web")).latest("created_at")
    assert row.success, row.error or row.output_summary  # B knew the tool and opened its own session
    assert "from B" in row.output_summary


def run_in_the_playground(server: Server, cookie: str, tool: str, inputs: str) -> requests.Response:
    """The staff playground's run of ``tool`` on ``server``: execute_tool in that process."""
    session = requests.Session()
    session.headers["Cookie"] = cookie
    page = session.get(f"{server.url}/playground/{tool}/", timeout=60)
    assert page.status_code == 200, page.text[-2000:]
    token = page.cookies.get("csrftoken") or session.cookies.get("csrftoken")
    return session.post(
        f"{server.url}/playground/{tool}/",
        data={"inputs": inputs, "csrfmiddlewaretoken": token},
        headers={"Cookie": f"{cookie}; csrftoken={token}", "Referer": f"{server.url}/playground/{tool}/"},
        timeout=120,
    )


def test_a_call_waiting_for_approval_on_one_process_is_approved_and_resumed_from_the_other(servers, model, cast):
    a, b = servers
    conversation = cast["conversation"]
    call_command("seed_tools", verbosity=0)
    ApprovalRule.objects.create(name="search needs a person", tenant_id=TENANT, tool_name="search_tools")
    arguments = {"query": "make a plan", "reasoning": "to find a planning tool"}
    model.script([{"tool_uses": [{"name": "search_tools", "input": arguments}]}, {"text": ["Found it."]}])

    paused = post(b, f"/api/conversations/{conversation.pk}/messages/", cast["ann"], {"text": "find a tool"})
    assert paused.status_code == 201, paused.text
    row = PendingApproval.objects.get(conversation_id=conversation.pk)
    approved = post(a, f"/api/approvals/{row.pk}/approve/", cast["ann"], {"args_hash": row.args_hash})

    assert approved.status_code == 200, approved.text
    assert approved.json()["status"] == ApprovalStatus.APPROVED and approved.json()["resumed"] == "end_turn"
    assert ToolExecutionLog.objects.filter(tool_name="search_tools", success=True).exists()
    assert ChatMessage.objects.filter(conversation=conversation, role="assistant").last().text == "Found it."


def test_two_clusters_on_one_broker_run_each_job_once():
    from tests.faults.jobs_cast import queue

    clusters = [start_cluster(f"jobs-{n}") for n in range(2)]
    try:
        tokens = [queue("record_run")[1] for _ in range(JOBS)]
        finished = wait_for(lambda: SeedLog.objects.filter(key__startswith="job-done:").count() >= JOBS, START_SECONDS)
    finally:
        for cluster in clusters:
            cluster.stop()

    assert finished, f"only {SeedLog.objects.filter(key__startswith='job-done:').count()} of {JOBS} jobs finished"
    runs = {token: SeedLog.objects.filter(key__startswith=f"job-attempt:{token}:").count() for token in tokens}
    assert set(runs.values()) == {1}, runs
    pids = {row.value["pid"] for row in SeedLog.objects.filter(key__startswith="job-attempt:")}
    assert len(pids) >= 2, "one worker took every job: the test did not show two workers sharing them"
    assert JobRun.objects.count() == JOBS


def test_a_process_killed_mid_turn_leaves_a_conversation_that_goes_on_from_the_other(servers, model, cast):
    """Last in the module: it kills B."""
    a, b = servers
    conversation = cast["conversation"]
    model.script([{"text": ["Never ", "finished."], "pause_after": 4}, {"text": ["Answered by A."]}])

    def send() -> None:
        try:
            post(b, f"/api/conversations/{conversation.pk}/messages/", cast["ann"], {"text": "hi"})
        except requests.ConnectionError:  # what a client sees of a server killed under its request
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    assert wait_for(lambda: model.requests, 120), "the turn on B never reached the model"

    b.signal(signal.SIGKILL)
    assert b.wait(30) is not None
    model.resume()
    following = post(a, f"/api/conversations/{conversation.pk}/messages/", cast["ann"], {"text": "still there?"})

    assert following.status_code == 201, following.text
    assert following.json()["message"]["text"] == "Answered by A."
    turns = dict(TurnRecord.objects.filter(conversation=conversation).values_list("turn", "status"))
    assert turns == {1: TurnRecord.Status.INTERRUPTED, 2: TurnRecord.Status.FINISHED}
