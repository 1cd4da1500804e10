"""A call no conversation is behind (the command line, the playground) meets the tenant's
policy rules in the registry's gate, as a turn's calls do."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command

from conversations.models import PolicyRule
from registry.models import TenantMembership, ToolExecutionLog
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db

SEARCH = '{"query": "plan the steps"}'


def rule(kind="requires_capability", parameter="group:finance", action="block", tenant_id=TENANT):
    return PolicyRule.objects.create(
        name="finance only",
        tool_name="search_tools",
        kind=kind,
        parameter=parameter,
        action=action,
        tenant_id=tenant_id,
    )


def call_tool(capsys, *args):
    """Run `manage.py call_tool search_tools ...`; returns (exit code, stdout)."""
    try:
        call_command("call_tool", "search_tools", "--input", SEARCH, *args)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().out


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("boss", password="pw", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    client.force_login(user)
    return user


def test_the_command_line_is_refused_by_a_blocking_rule(capsys):
    rule()
    code, out = call_tool(capsys, "--tenant", TENANT)
    assert code == 1
    assert "refused by policy" in out and "group:finance" in out
    assert ToolExecutionLog.objects.get(tool_name="search_tools").outcome_kind == "PolicyBlocked"


def test_a_user_holding_the_capability_runs_the_tool_from_the_command_line(capsys):
    rule()
    user = get_user_model().objects.create_user("fin")
    user.groups.add(Group.objects.create(name="finance"))
    code, out = call_tool(capsys, "--tenant", TENANT, "--user", "fin")
    assert code == 0 and "✓ ok." in out


def test_a_rule_for_every_tenant_applies_and_another_tenants_rule_does_not(capsys):
    rule(tenant_id=OTHER_TENANT)
    assert call_tool(capsys, "--tenant", TENANT)[0] == 0
    rule(tenant_id="*")
    assert call_tool(capsys, "--tenant", TENANT)[0] == 1


def test_a_warning_rule_lets_the_call_run(capsys):
    rule(action="warn")
    assert call_tool(capsys, "--tenant", TENANT)[0] == 0


def test_a_tool_that_needs_another_first_is_refused_with_no_conversation_behind_the_call(capsys):
    rule(kind="requires_prior_tool", parameter="preview_data")
    code, out = call_tool(capsys, "--tenant", TENANT)
    assert code == 1 and "run preview_data first" in out


def test_a_disabled_rule_stops_applying_once_it_is_saved(capsys):
    refusing = rule()
    assert call_tool(capsys, "--tenant", TENANT)[0] == 1
    refusing.enabled = False
    refusing.save()
    assert call_tool(capsys, "--tenant", TENANT)[0] == 0


def test_the_playground_is_refused_by_a_blocking_rule(client, staff):
    rule()
    page = client.post("/playground/search_tools/", {"inputs": SEARCH, "tenant": TENANT}).content.decode()
    assert "refused by policy" in page
    assert ToolExecutionLog.objects.get(tool_name="search_tools").outcome_kind == "PolicyBlocked"


def test_staff_meet_a_rule_that_needs_staff_only_as_far_as_they_are_staff(client, staff):
    rule(parameter="staff")
    page = client.post("/playground/search_tools/", {"inputs": SEARCH, "tenant": TENANT}).content.decode()
    assert "refused by policy" not in page and "✓ ok." in page
