"""A connected server's prompts are offered to the tenant's users as slash commands, and one
filled in with the person's arguments answers the messages the chat page inserts."""

import pytest
from rest_framework.test import APIClient

from tests.conftest import OTHER_TENANT
from tests.mcp.conftest import add_server
from tests.mcp.test_security import client_for

pytestmark = pytest.mark.django_db(transaction=True)

REVIEW = {
    "command": "/demo:review",
    "server": "demo",
    "name": "review",
    "title": "Review code",
    "description": "Ask for a review of a piece of code.",
    "arguments": [
        {"name": "code", "description": "", "required": True},
        {"name": "focus", "description": "", "required": False},
    ],
}


@pytest.fixture
def demo():
    return add_server()


def test_the_tenants_servers_prompts_are_listed_with_their_arguments(demo):
    listed = client_for("ann").get("/api/mcp/prompts/").json()
    assert listed == {"prompts": [REVIEW], "unavailable": {}}


def test_a_prompt_is_filled_in_with_the_persons_arguments(demo):
    answer = client_for("ann").post(
        "/api/mcp/prompts/render/", {"server": "demo", "name": "review", "arguments": {"code": "x = 1"}}
    )
    assert answer.status_code == 200
    assert answer.json() == {"messages": [{"role": "user", "text": "Please review this code for clarity:\nx = 1"}]}


def test_a_missing_required_argument_is_a_400_naming_it(demo):
    answer = client_for("ann").post("/api/mcp/prompts/render/", {"server": "demo", "name": "review"})
    assert answer.status_code == 400
    assert answer.json() == {"arguments.code": ["prompt 'review' needs the argument 'code'"]}


def test_a_misspelt_prompt_is_a_400_naming_the_closest(demo):
    answer = client_for("ann").post("/api/mcp/prompts/render/", {"server": "demo", "name": "reveiw"})
    assert answer.json() == {"name": ["MCP server 'demo' offers no prompt called 'reveiw'; choose from: review"]}


def test_an_argument_the_prompt_does_not_take_is_refused_naming_those_it_does(demo):
    body = {"server": "demo", "name": "review", "arguments": {"code": "x", "tone": "kind"}}
    answer = client_for("ann").post("/api/mcp/prompts/render/", body)
    assert answer.json() == {"arguments.tone": ["prompt 'review' takes no argument 'tone'; choose from: code, focus"]}


def test_another_tenants_servers_prompts_are_neither_listed_nor_fetched(demo):
    other = client_for("bob", tenant=OTHER_TENANT)
    assert other.get("/api/mcp/prompts/").json() == {"prompts": [], "unavailable": {}}
    answer = other.post("/api/mcp/prompts/render/", {"server": "demo", "name": "review", "arguments": {"code": "x"}})
    assert answer.status_code == 400 and "no enabled MCP server called 'demo'" in answer.json()["server"][0]


def test_anonymous_requests_are_refused():
    assert APIClient().get("/api/mcp/prompts/").status_code in (401, 403)
