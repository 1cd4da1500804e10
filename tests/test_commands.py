import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from conversations.models import Conversation
from registry.models import ToolExecutionLog
from tests import handlers
from tests.conftest import OTHER_TENANT

pytestmark = pytest.mark.django_db


def run_call_tool(capsys, *args):
    """Run `manage.py call_tool ...`; returns (exit code, stdout)."""
    try:
        call_command("call_tool", *args)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().out


def test_list_tools_json_lists_name_type_status_and_category(capsys):
    call_command("list_tools", "--json")
    tools = json.loads(capsys.readouterr().out)
    assert {
        "name": "plan",
        "tool_type": "system",
        "status": "approved",
        "category": "utility",
        "unavailable": None,
    } in tools


def test_list_tools_for_a_tenant_hides_other_tenants_tools(capsys, make_tool):
    make_tool("globex_only", handlers.echo, tenant_id=OTHER_TENANT)
    call_command("list_tools", "--tenant", "acme", "--json")
    assert "globex_only" not in {t["name"] for t in json.loads(capsys.readouterr().out)}
    call_command("list_tools", "--tenant", OTHER_TENANT, "--json")
    assert "globex_only" in {t["name"] for t in json.loads(capsys.readouterr().out)}


def test_call_tool_prints_the_content_and_exits_zero_on_success(capsys):
    code, out = run_call_tool(capsys, "search_tools", "--input", '{"query": "plan"}')
    assert code == 0
    assert "- plan:" in out


def test_call_tool_exits_one_on_an_error(capsys):
    code, out = run_call_tool(capsys, "plan", "--input", '{"steps": [{"title": "x"}]}')
    assert code == 1
    assert out.startswith("✗ error (NoConversation)")


def test_call_tool_prints_a_schema_hint_for_an_unknown_tool_and_exits_zero(capsys):
    code, out = run_call_tool(capsys, "no_such_tool", "--input", "{}")
    assert code == 0
    assert out.startswith("⚠ schema hint: unknown tool 'no_such_tool'")


def test_call_tool_prints_a_schema_hint_for_bad_input_and_exits_zero(capsys):
    code, out = run_call_tool(capsys, "search_tools", "--input", '{"limit": 3}')
    assert code == 0
    assert "query: this field is required" in out


def test_call_tool_records_tenant_user_and_conversation(capsys):
    run_call_tool(
        capsys,
        "plan",
        "--tenant",
        "t1",
        "--user",
        "ann",
        "--conversation",
        "conv-1",
        "--input",
        '{"steps": [{"title": "one"}]}',
    )
    row = ToolExecutionLog.objects.get()
    assert (row.tenant_id, row.user_id, row.conversation_id, row.success) == ("t1", "ann", "conv-1", True)
    assert Conversation.objects.get(id="conv-1").plan["steps"] == [{"title": "one", "status": "pending"}]


def test_call_tool_refuses_another_tenants_conversation(capsys):
    Conversation.objects.create(id="theirs", tenant_id=OTHER_TENANT)
    with pytest.raises(Exception, match="does not belong to tenant 'acme'"):
        call_command("call_tool", "plan", "--tenant", "acme", "--conversation", "theirs")


def test_call_tool_rejects_input_that_is_not_a_json_object(capsys):
    with pytest.raises(Exception, match="--input is not valid JSON"):
        call_command("call_tool", "plan", "--input", "{steps")
    with pytest.raises(Exception, match="must be a JSON object"):
        call_command("call_tool", "plan", "--input", "[1]")


def test_ensure_admin_creates_the_staff_login_from_the_environment(settings, capsys):
    settings.EUNICE_ADMIN_USER, settings.EUNICE_ADMIN_PASSWORD = "boss", "a-long-passphrase-1"
    call_command("ensure_admin")
    user = get_user_model().objects.get(username="boss")
    assert user.is_staff and user.check_password("a-long-passphrase-1")
    assert "a-long-passphrase-1" not in capsys.readouterr().out


def test_ensure_admin_generates_and_prints_a_password_once(settings, capsys):
    settings.EUNICE_ADMIN_USER, settings.EUNICE_ADMIN_PASSWORD = "boss", ""
    call_command("ensure_admin")
    first = capsys.readouterr().out
    password = first.split("password '")[1].split("'")[0]
    assert get_user_model().objects.get(username="boss").check_password(password)
    call_command("ensure_admin")
    assert capsys.readouterr().out == ""


def test_the_staff_login_belongs_to_a_tenant_so_it_can_chat(settings):
    from registry.models import TenantMembership
    from registry.tenancy import tenant_of

    settings.EUNICE_ADMIN_USER, settings.EUNICE_ADMIN_PASSWORD = "boss", "a-long-passphrase-1"
    call_command("ensure_admin")
    assert tenant_of(get_user_model().objects.get(username="boss")) == "default"
    TenantMembership.objects.all().delete()
    call_command("ensure_admin")  # an older login without one gets it on the next start
    assert tenant_of(get_user_model().objects.get(username="boss")) == "default"
