"""A custom tool declares the tools its code may call; they are checked, hashed and shown."""

import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from registry.custom_tools import approve_custom_tool, edit_custom_tool, register_custom_tool
from registry.models import ToolDefinition, ToolStatus
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db


def cli(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def make(name="charts", dependencies=("create_chart",), tenant=TENANT):
    return register_custom_tool(
        name=name,
        code="result = 1",
        description="Draws.",
        tenant_id=tenant,
        input_schema={"type": "object", "properties": {}},
        dependencies=dependencies,
    )


def test_the_cli_records_dependencies_and_the_review_page_shows_them(tmp_path, client, staff):
    source = tmp_path / "tool.py"
    source.write_text("result = call_tool('create_chart', {})")
    cli(
        "create_custom_tool",
        "charts",
        "--code-file",
        str(source),
        "--description",
        "Draws.",
        "--tenant",
        TENANT,
        "--dependencies",
        "create_chart,search_tools",
    )
    tool = ToolDefinition.objects.get(name="charts")
    assert tool.dependencies == ["create_chart", "search_tools"]
    client.force_login(staff)
    page = client.get(f"/admin/registry/tooldefinition/{tool.pk}/review/").content.decode()
    assert "The code may call: <code>create_chart</code>, <code>search_tools</code>" in page


def test_an_unknown_dependency_is_refused_naming_the_closest_tools(tmp_path):
    source = tmp_path / "tool.py"
    source.write_text("result = 1")
    with pytest.raises(
        CommandError,
        match=r"no tool named 'creat_chart' is available to tenant 'acme'; "
        r"did you mean create_chart",
    ):
        cli(
            "create_custom_tool",
            "charts",
            "--code-file",
            str(source),
            "--description",
            "Draws.",
            "--tenant",
            TENANT,
            "--dependencies",
            "creat_chart",
        )
    assert not ToolDefinition.objects.filter(name="charts").exists()


def test_another_tenants_tool_is_not_a_dependency():
    make("theirs", dependencies=(), tenant=OTHER_TENANT)
    with pytest.raises(ValidationError, match="no tool named 'theirs' is available to tenant 'acme'"):
        make(dependencies=["theirs"])


def test_a_tool_may_declare_itself_for_recursion():
    assert make("again", dependencies=["again"]).dependencies == ["again"]


def test_changing_the_dependencies_voids_the_approval(staff, custom_tools_on, call):
    tool = approve_custom_tool(make(), acting_user=staff)
    tool = edit_custom_tool(tool, acting_user=staff, dependencies=["create_chart", "search_tools"])
    assert tool.status == ToolStatus.TESTING and tool.approved_hash != tool.definition_hash


def test_a_bulk_change_of_the_dependencies_or_the_tenant_cannot_run(staff, custom_tools_on, call):
    approve_custom_tool(make("widened"), acting_user=staff)
    approve_custom_tool(make("moved"), acting_user=staff)
    ToolDefinition.objects.filter(name="widened").update(dependencies=["create_chart", "register_datasource"])
    ToolDefinition.objects.filter(name="moved").update(tenant_id="*")
    assert "awaits review" in call("widened").content
    assert "awaits review" in call("moved").content


def test_the_snapshot_carries_the_dependencies(custom_tools_on, registry, staff):
    approve_custom_tool(make(), acting_user=staff)
    from registry.snapshot import Snapshot

    assert Snapshot().current()["charts"].dependencies == ("create_chart",)
