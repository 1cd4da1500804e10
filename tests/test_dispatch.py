import asyncio

import pytest
from django.db import connection

from registry.context import ToolContext
from registry.models import ToolDefinition, ToolType
from tests import handlers
from tests.conftest import OTHER_TENANT, TENANT, text

pytestmark = pytest.mark.django_db

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "units": {"enum": ["metric", "imperial"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def test_a_system_tool_runs_through_execute_tool(call):
    result = call("plan")
    assert result.error is None or "conversation" in result.error


def test_an_unknown_tool_names_the_closest_tools(call, make_tool):
    make_tool("weather_forecast", handlers.echo)
    result = call("wether_forecast")
    assert result.error is None  # a correction the model can act on, not a failure
    assert result.content.startswith("⚠ schema hint: unknown tool 'wether_forecast'")
    assert "  1. weather_forecast (score" in result.content


def test_an_unknown_tool_is_never_answered_with_a_tool_that_cannot_run_here(call, settings):
    # Custom tools are off (the default): build_custom_tool is not offered, so a near
    # miss of its name must not bring it back as a suggestion. The skill tools wait for
    # an approved skill this workspace does not have.
    settings.EUNICE_CUSTOM_TOOLS = False
    for wrong in ("build_custom_tol", "use_skil"):
        result = call(wrong)
        assert result.content.startswith(f"⚠ schema hint: unknown tool {wrong!r}")
        assert "build_custom_tool" not in result.content and "use_skill" not in result.content


def test_an_unknown_tool_names_at_most_three_alternatives(call, make_tool):
    for suffix in "abcde":
        make_tool(f"report_{suffix}", handlers.echo)
    result = call("report_")
    assert "  3. report_" in result.content and "  4." not in result.content


def test_a_missing_required_field_is_named_with_its_rule(call, make_tool):
    make_tool("forecast", handlers.echo, input_schema=SCHEMA)
    result = call("forecast", days=3)
    assert result.content.startswith("⚠ schema hint: invalid input for forecast:")
    assert "city: this field is required (rule: required)" in result.content


def test_a_wrong_type_is_named_with_its_rule(call, make_tool):
    make_tool("forecast", handlers.echo, input_schema=SCHEMA)
    result = call("forecast", city="Oslo", days="three")
    assert "days: must be integer (rule: type)" in result.content


def test_a_bound_violation_is_named_with_its_rule(call, make_tool):
    make_tool("forecast", handlers.echo, input_schema=SCHEMA)
    assert "days: must be smaller than or equal to 14 (rule: maximum)" in call("forecast", city="Oslo", days=30).content


def test_an_enum_violation_lists_the_valid_choices(call, make_tool):
    make_tool("forecast", handlers.echo, input_schema=SCHEMA)
    result = call("forecast", city="Oslo", units="kelvin")
    assert 'units: must be one of "metric", "imperial" (rule: enum)' in result.content


def test_an_unexpected_field_suggests_the_closest_accepted_one(call, make_tool):
    make_tool("forecast", handlers.echo, input_schema=SCHEMA)
    result = call("forecast", city="Oslo", dayz=2)
    assert "dayz: not an accepted field (rule: additionalProperties)" in result.content
    assert "did you mean days" in result.content


def test_a_misspelt_required_field_is_pointed_out(call, make_tool):
    make_tool("forecast", handlers.echo, input_schema=SCHEMA)
    result = call("forecast", cty="Oslo")
    assert "you passed 'cty', did you mean 'city'?" in result.content


def test_reasoning_is_stripped_from_inputs_into_the_context(call, make_tool):
    make_tool("forecast", handlers.echo, input_schema=SCHEMA)
    result = call("forecast", city="Oslo", reasoning="the user asked about Oslo")
    assert result.error is None
    assert text(result) == "echo {'city': 'Oslo'}"  # the handler never saw `reasoning`


def test_a_handler_exception_becomes_an_error_result_without_a_traceback(call, make_tool):
    make_tool("divide", handlers.boom)
    result = call("divide")
    assert result.error == "division by zero in step 3"
    assert result.content == "✗ error (ZeroDivisionError): division by zero in step 3"


def test_an_async_handler_runs_when_no_loop_is_running(call, make_tool):
    make_tool("shout", handlers.async_echo)
    assert text(call("shout", word="hey")) == "async hey"


@pytest.mark.django_db(transaction=True)
def test_an_async_handler_runs_when_a_worker_thread_calls_under_a_running_loop(call, make_tool):
    make_tool("shout", handlers.async_echo)

    def on_a_worker_thread():
        try:
            return call("shout", word="nested")
        finally:
            connection.close()  # this thread's own connection

    async def inside_a_loop():
        # How an ASGI consumer calls sync code: a worker thread, while the
        # loop keeps running. The handler must not need the caller's loop.
        return await asyncio.to_thread(on_a_worker_thread)

    assert text(asyncio.run(inside_a_loop())) == "async nested"


def test_the_blocking_call_on_an_event_loop_thread_is_refused_clearly(call, make_tool):
    make_tool("shout", handlers.async_echo)

    async def on_the_loop():
        return call("shout", word="x")

    with pytest.raises(RuntimeError, match="aexecute_tool"):
        asyncio.run(on_the_loop())


@pytest.mark.django_db(transaction=True)
def test_aexecute_tool_awaits_an_async_handler(registry, make_tool):
    make_tool("shout", handlers.async_echo)
    result = asyncio.run(registry.aexecute_tool("shout", {"word": "aw"}, ToolContext(tenant_id="acme")))
    assert text(result) == "async aw"


def test_a_slow_threaded_handler_times_out_with_an_error(call, make_tool):
    handlers.released.clear()
    make_tool("dawdle", handlers.slow, inline=False, timeout=0.05)
    try:
        result = call("dawdle")
    finally:
        handlers.released.set()
    assert result.content == "✗ error (TimeoutError): timed out after 0.05 s"


def test_a_slow_async_handler_times_out_with_an_error(call, make_tool):
    make_tool("snooze", handlers.async_slow, timeout=0.05)
    assert call("snooze").content == "✗ error (TimeoutError): timed out after 0.05 s"


def test_a_custom_tool_says_custom_tools_are_not_enabled(call, make_tool):
    tool = make_tool("mine", tool_type=ToolType.CUSTOM, implementation="result = 1")
    # Approved the only way a custom tool is: bound to its definition hash.
    type(tool).objects.filter(pk=tool.pk).update(status="approved", approved_hash=tool.definition_hash)
    result = call("mine")
    assert "custom tools are not enabled" in result.content


def test_an_mcp_tool_without_a_connection_says_so(call, make_tool):
    make_tool("mcp_weather_now", tool_type=ToolType.MCP)
    assert "its MCP server is not connected" in call("mcp_weather_now").error


def test_another_tenants_tool_is_unknown_to_this_tenant(call, make_tool):
    make_tool("globex_secret", handlers.echo, tenant_id=OTHER_TENANT)
    result = call("globex_secret")
    assert "unknown tool 'globex_secret'" in result.content
    assert call("globex_secret", tenant=OTHER_TENANT).error is None


def test_a_disabled_tool_cannot_be_called(call, make_tool):
    make_tool("off", handlers.echo, enabled=False)
    assert "unknown tool 'off'" in call("off").content


def test_a_broken_handler_path_disables_only_that_tool(call, caplog):
    ToolDefinition.objects.filter(name="plan").update(handler_path="tools.nowhere.plan")
    result = call("plan")
    assert result.content.startswith("⚠ schema hint: plan is unavailable here: its handler could not be loaded")
    assert "tools.nowhere.plan" in caplog.text and "plan" in caplog.text
    assert call("search_tools", query="plan").error is None


def test_execute_tool_refuses_a_call_without_a_tenant(registry):
    with pytest.raises(ValueError, match="tenant_id"):
        registry.execute_tool("plan", {}, ToolContext(tenant_id=""))


def test_an_inline_handler_that_returns_a_coroutine_is_awaited(call, make_tool):
    async def later(city):
        await asyncio.sleep(0)
        return f"sunny in {city}"

    make_tool("forecast", lambda inputs, context: later(inputs["city"]), input_schema=SCHEMA)
    assert text(call("forecast", city="Oslo")) == "sunny in Oslo"


def test_an_inline_handler_whose_coroutine_overruns_its_timeout_is_an_error(call, make_tool):
    async def never():
        await asyncio.Event().wait()

    make_tool("forecast", lambda inputs, context: never(), input_schema=SCHEMA, timeout=0.05)
    result = call("forecast", city="Oslo")
    assert result.error is not None and "timed out" in result.content


def test_a_handler_registered_again_runs_from_the_next_call(call, make_tool, registry):
    # The registry keeps what each tool's calls need (registry.toolplan) between calls.
    make_tool("swap", handlers.echo)
    assert call("swap").content.endswith("echo {}")
    registry.register_handler("swap", handlers.boom, inline=True)
    assert call("swap").error is not None


def test_a_requirement_is_checked_on_every_call(call, make_tool, registry):
    from registry.handlers import requires

    why_not: list[str] = []

    @requires(lambda: why_not[0] if why_not else None)
    def needy(inputs, context):
        return "ran"

    make_tool("needy")
    registry.register_handler("needy", needy, inline=True)
    assert call("needy").content.endswith("ran")
    why_not.append("its backend went away")
    assert "its backend went away" in call("needy").content


def test_a_tenant_requirement_is_checked_for_the_calling_tenant_on_every_call(make_tool, registry):
    from registry.handlers import requires_tenant

    holding: set[str] = {TENANT}

    @requires_tenant(lambda tenant: None if tenant in holding else "this workspace has no widget yet")
    def widget(inputs, context):
        return "ran"

    make_tool("widget")
    registry.register_handler("widget", widget, inline=True)

    def call_as(tenant):
        return registry.execute_tool("widget", {}, ToolContext(tenant_id=tenant, user_id="u1")).content

    assert call_as(TENANT).endswith("ran")
    assert "widget is unavailable here: this workspace has no widget yet" in call_as(OTHER_TENANT)
    holding.discard(TENANT)
    assert "this workspace has no widget yet" in call_as(TENANT)
    holding.add(TENANT)
    assert call_as(TENANT).endswith("ran")


def test_a_changed_schema_is_enforced_from_the_next_call(call, make_tool):
    row = make_tool("forecast", handlers.echo, input_schema=SCHEMA)
    assert call("forecast", city="Oslo").error is None
    row.input_schema = {**SCHEMA, "required": ["city", "days"]}
    row.save()
    assert "days: this field is required (rule: required)" in call("forecast", city="Oslo").content
