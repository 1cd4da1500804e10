"""Tools that cannot work are not offered, a call of one is answered with why, and list_tools says why."""

import json

import pytest
from django.core.management import call_command

from registry.models import ToolStatus, ToolType
from registry.surface import compose
from tests.conftest import TENANT
from tools.utility import find_tools

pytestmark = pytest.mark.django_db

NO_BACKEND = "no web search backend is configured (EUNICE_WEB_SEARCH_BACKEND)"
UNSUPPORTED = "unsupported: it must run as an MCP task (execution.taskSupport: required), which Eunice does not support"


def offered(registry, *paged_in):
    return {entry.name for entry in compose(registry, TENANT, working_set=list(paged_in))}


def listed(capsys) -> dict:
    call_command("list_tools", "--json")
    return {row["name"]: row["unavailable"] for row in json.loads(capsys.readouterr().out)}


@pytest.fixture
def no_search_backend(settings):
    settings.WEB_SEARCH_BACKEND = ""


def test_web_search_without_a_backend_is_not_offered(registry, no_search_backend):
    assert "web_search" not in offered(registry, "web_search")
    assert "web_search" not in {entry["name"] for entry in registry.get_tools_for_llm(TENANT)}


def test_web_search_with_a_backend_is_offered(registry, settings):
    settings.WEB_SEARCH_BACKEND = "tests.knowledge.test_web.fake_backend"
    assert "web_search" in offered(registry, "web_search")


def test_search_tools_does_not_find_a_tool_that_cannot_work(registry, no_search_backend):
    assert "web_search" not in {d.name for d, _ in find_tools(registry, "search the web", TENANT, 10)}


def test_calling_web_search_without_a_backend_answers_with_a_hint_saying_why(call, no_search_backend):
    result = call("web_search", query="solar")
    assert result.error is None  # a correction the model acts on, not a failure
    assert result.content.startswith(f"⚠ schema hint: web_search is unavailable here: {NO_BACKEND}")


def test_a_row_without_a_handler_is_not_offered_and_a_call_says_why(registry, call, make_tool):
    make_tool("orphan")
    assert "orphan" not in offered(registry, "orphan")
    assert call("orphan").content.startswith("⚠ schema hint: orphan is unavailable here: it has no registered handler")


def test_a_custom_tool_is_not_offered_while_custom_tools_are_off(registry, make_tool):
    tool = make_tool("mine", tool_type=ToolType.CUSTOM, implementation="result = 1")
    type(tool).objects.filter(pk=tool.pk).update(status="approved", approved_hash=tool.definition_hash)
    assert "mine" not in offered(registry, "mine")


def test_list_tools_says_why_each_unavailable_tool_cannot_run(capsys, registry, make_tool, no_search_backend):
    make_tool("orphan")
    make_tool("mcp_acme_tasks", tool_type=ToolType.MCP, status=ToolStatus.TESTING, status_message=UNSUPPORTED)
    reasons = listed(capsys)
    assert reasons["web_search"].startswith(NO_BACKEND)
    assert reasons["orphan"] == "it has no registered handler"
    assert reasons["mcp_acme_tasks"] == f"it is not approved (status testing): {UNSUPPORTED}"
    assert reasons["plan"] is None
