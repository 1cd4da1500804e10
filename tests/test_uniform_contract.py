"""The contract as dispatch applies it: ratchet, telemetry, and hints that help."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from registry.models import ToolExecutionLog
from tests import handlers
from tools.catalog import all_system_tools, tools_without_contract_spec

BASELINE = Path(__file__).with_name("contract_deferred_baseline.json")


def baseline() -> set[str]:
    return set(json.loads(BASELINE.read_text()))


def test_the_deferred_baseline_is_empty():
    assert baseline() == set()


def test_every_system_tool_ships_with_a_contract_spec():
    deferred = tools_without_contract_spec(all_system_tools())
    assert deferred <= baseline(), f"tools without a contract spec: {sorted(deferred - baseline())}"


def test_the_ratchet_fails_when_a_tool_without_a_spec_is_added():
    unregistered = {
        "name": "tool_without_spec",
        "description": "Added in a hurry.",
        "input_schema": {"type": "object"},
        "category": "utility",
        "handler_path": "tests.handlers.echo",
    }
    deferred = tools_without_contract_spec([*all_system_tools(), unregistered])
    assert deferred - baseline() == {"tool_without_spec"}


@pytest.mark.django_db
def test_an_unknown_tool_hint_carries_each_alternatives_input_schema(call, make_tool):
    make_tool(
        "send_email",
        handlers.echo,
        description="Send an email.",
        input_schema={
            "type": "object",
            "properties": {"to": {"type": "string"}, "cc": {"type": "string"}},
            "required": ["to"],
        },
    )
    result = call("send_mail")
    assert "  1. send_email (score" in result.content
    assert "     input: {to: string, cc?: string}" in result.content


@pytest.mark.django_db
def test_an_unknown_tool_with_no_close_match_points_to_search_tools(call):
    assert call("zzqx").content == "⚠ schema hint: unknown tool 'zzqx'; use search_tools to find one"


@pytest.mark.django_db
def test_an_input_hint_names_field_rule_and_expected_fragment(call):
    result = call("search_tools", query="x", limit=99)
    assert result.error is None
    assert "limit: must be smaller than or equal to 20 (rule: maximum)" in result.content
    assert '"maximum":20' in result.content  # the schema fragment it broke
    assert "input: {query: string, limit?: integer}" in result.content  # how to call it right


@pytest.mark.django_db
def test_a_contract_envelope_event_is_recorded_for_every_call(call, make_tool):
    make_tool("divide", handlers.boom)

    class Recorder:
        events = []

        def record(self, event_type, data):
            self.events.append((event_type, data))

    recorder = Recorder()
    call("search_tools", context={"recorder": recorder}, query="plan")
    call("nope", context={"recorder": recorder})
    call("divide", context={"recorder": recorder})
    assert recorder.events == [
        ("contract_envelope", {"tool": "search_tools", "envelope": "ok", "kind": None}),
        ("contract_envelope", {"tool": "nope", "envelope": "hint", "kind": "schema"}),
        ("contract_envelope", {"tool": "divide", "envelope": "err", "kind": "ZeroDivisionError"}),
    ]


@pytest.mark.django_db
def test_a_failing_recorder_never_fails_the_call(call):
    class Broken:
        def record(self, event_type, data):
            raise RuntimeError("telemetry is down")

    assert call("search_tools", context={"recorder": Broken()}, query="plan").error is None


@pytest.mark.django_db
def test_tool_stats_counts_ok_hint_and_err_with_their_kinds(call, make_tool, capsys):
    make_tool("divide", handlers.boom)
    call("search_tools", query="plan")
    call("search_tools", query="plan", limit=0)
    call("divide")
    call("divide", tenant="globex")
    call_command("tool_stats", "--json", "--tenant", "acme")
    stats = json.loads(capsys.readouterr().out)
    assert stats["search_tools"] == {"ok": 1, "hint": 1, "err": 0, "hint_kinds": {"schema": 1}, "err_kinds": {}}
    assert stats["divide"] == {"ok": 0, "hint": 0, "err": 1, "hint_kinds": {}, "err_kinds": {"ZeroDivisionError": 1}}


@pytest.mark.django_db
def test_hints_are_not_counted_as_failures(call):
    call("search_tools", query="plan", limit=0)
    assert ToolExecutionLog.objects.get().success is True
