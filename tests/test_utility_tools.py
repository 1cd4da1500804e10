import pytest

from conversations.models import Conversation
from tests import handlers
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation():
    return Conversation.objects.create(tenant_id=TENANT, title="Trip")


def test_search_tools_ranks_a_tool_whose_name_matches_first(call, make_tool):
    make_tool("send_email", handlers.echo, description="Send an email message to someone.")
    make_tool("read_email", handlers.echo, description="Read an email from the inbox.")
    make_tool("draw_diagram", handlers.echo, description="Draw a diagram from a dataset.")
    result = call("search_tools", query="send an email")
    lines = [line for line in result.content.splitlines() if line.startswith("- ")]
    assert lines[0].startswith("- send_email:")
    assert any(line.startswith("- read_email:") for line in lines)
    assert "draw_diagram" not in result.content


def test_search_tools_returns_each_tools_input_schema(call, make_tool):
    make_tool("send_email", handlers.echo, input_schema={"type": "object", "properties": {"to": {"type": "string"}}})
    assert '"to":{"type":"string"}' in call("search_tools", query="email").content


def test_search_tools_respects_the_limit(call, make_tool):
    for n in range(6):
        make_tool(f"email_tool_{n}", handlers.echo)
    result = call("search_tools", query="email tool", limit=2)
    assert result.content.count("\n- ") == 2


def test_search_tools_never_returns_another_tenants_tools(call, make_tool):
    make_tool("globex_email", handlers.echo, tenant_id=OTHER_TENANT)
    assert "globex_email" not in call("search_tools", query="globex email").content


def test_search_tools_says_plainly_when_nothing_matches(call):
    result = call("search_tools", query="zzzz qqqq")
    assert result.content.startswith("⚠ fetch hint: no tools match 'zzzz qqqq'")
    assert "narrow: describe the task in other, plainer words" in result.content


def test_plan_creates_a_plan_stored_on_the_conversation(call, conversation):
    result = call(
        "plan",
        context={"conversation_id": conversation.id},
        goal="Book a trip",
        steps=[{"title": "Pick dates"}, {"title": "Book flights"}],
    )
    conversation.refresh_from_db()
    assert result.error is None
    assert conversation.plan["steps"][1] == {"title": "Book flights", "status": "pending"}
    assert "Plan (0/2 done)" in result.content and "Goal: Book a trip" in result.content


def test_plan_updates_one_steps_status(call, conversation):
    ctx = {"conversation_id": conversation.id}
    call("plan", context=ctx, steps=[{"title": "Pick dates"}, {"title": "Book flights"}])
    result = call("plan", context=ctx, update={"step": 1, "status": "done"})
    assert "1. [x] Pick dates" in result.content
    assert "Plan (1/2 done)" in result.content


def test_plan_refuses_a_step_that_does_not_exist(call, conversation):
    ctx = {"conversation_id": conversation.id}
    call("plan", context=ctx, steps=[{"title": "Only step"}])
    result = call("plan", context=ctx, update={"step": 4, "status": "done"})
    assert result.content.startswith("⚠ schema hint: update.step 4 does not exist; the plan has 1 step(s)")
    assert "1. step 1: Only step" in result.content


def test_plan_without_a_conversation_says_so(call):
    assert call("plan", steps=[{"title": "x"}]).error == "plan needs an active conversation of this tenant"


def test_plan_cannot_touch_another_tenants_conversation(call):
    theirs = Conversation.objects.create(tenant_id=OTHER_TENANT)
    result = call("plan", context={"conversation_id": theirs.id}, steps=[{"title": "x"}])
    theirs.refresh_from_db()
    assert result.error is not None and theirs.plan == {}


@pytest.fixture
def resident(monkeypatch):
    """Make the named tools the chat mode's resident floor (offered on every call)."""

    def make(*names):
        monkeypatch.setattr("registry.surface.resolve_floor_names", lambda: [(n, "usage") for n in names])

    return make


def test_search_tools_lists_only_tools_the_model_cannot_call_yet_and_names_the_others(call, make_tool, resident):
    make_tool("send_email", handlers.echo, description="Send an email message to someone.")
    make_tool("send_fax", handlers.echo, description="Send a fax message to someone.")
    resident("send_email")
    result = call("search_tools", query="send an email message")
    listed = [line.split(":")[0] for line in result.content.splitlines() if line.startswith("- ")]
    assert "- send_email" not in listed
    assert "- send_fax" in listed
    assert "These match too, and you already have them: send_email." in result.content


def test_a_search_that_only_matches_tools_the_model_has_says_so(call, make_tool, resident):
    make_tool("frobnicate_zorblax", handlers.echo, description="Frobnicate a zorblax.")
    resident("frobnicate_zorblax")
    result = call("search_tools", query="frobnicate zorblax")
    assert result.content.startswith(
        "⚠ fetch hint: no tools match 'frobnicate zorblax'; of the tools you already have, these match:"
        " frobnicate_zorblax"
    )


def test_leaving_resident_tools_out_still_fills_the_limit(make_tool, resident, registry):
    from tools.utility import find_tools

    for n in range(4):
        make_tool(f"email_tool_{n}", handlers.echo, description=f"Email tool number {n}.")
    resident("email_tool_0", "email_tool_1")
    hits = find_tools(registry, "email tool", TENANT, 2)
    assert [d.name for d, _ in hits] == ["email_tool_2", "email_tool_3"]
