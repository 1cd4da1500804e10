"""Class 5: sandboxed code calls only the tools its custom tool declares, never a tool
that starts processes, registers data sources or installs MCP servers, and never with
staff rights, even when a staff member runs it."""

import pytest

from datacatalog.models import DataSource
from registry.models import MCPServer, SandboxRun
from tests.conftest import text

pytestmark = pytest.mark.django_db

PROBE = """
answers = []
for name, args in [('install_mcp_server', {'name': 'everything'}),
                   ('register_datasource', {'name': 'app', 'kind': 'sqlite', 'path': 'var/eunice.sqlite3'}),
                   ('leaf', {})]:
    answers.append(name + ' -> ' + call_tool(name, args))
result = '\\n'.join(answers)
"""


@pytest.fixture
def as_staff(staff):
    return {"user_id": str(staff.pk)}


def test_a_staff_members_run_cannot_install_register_or_call_undeclared_tools(approved_tool, call, as_staff):
    approved_tool("leaf", "result = 'leaf ran'")
    approved_tool("grabby", PROBE, dependencies=["install_mcp_server", "register_datasource"])
    lines = text(call("grabby", context=as_staff)).splitlines()
    assert lines[0].startswith("install_mcp_server -> ✗ error (SandboxPolicy)")
    assert "'install_mcp_server' can never be called from sandboxed code" in lines[0]
    assert "'register_datasource' can never be called from sandboxed code" in lines[1]
    assert "does not declare 'leaf' in its dependencies" in lines[2]
    assert "leaf ran" not in lines[2]
    assert not MCPServer.objects.exists() and not DataSource.objects.exists()
    assert not SandboxRun.objects.filter(tool_name="leaf").exists()


def test_a_declared_tool_that_sandboxed_code_may_call_runs(approved_tool, call, as_staff):
    approved_tool("leaf", "result = 'leaf ran'")
    approved_tool("polite", "result = call_tool('leaf', {})", dependencies=["leaf"])
    assert "leaf ran" in text(call("polite", context=as_staff))


@pytest.mark.django_db(transaction=True)  # analyze_data runs on a worker thread: it must see the staff user
def test_a_staff_members_run_does_not_act_as_staff(approved_tool, call, as_staff):
    approved_tool(
        "analyst", "result = call_tool('analyze_data', {'code': 'result = 1'})", dependencies=["analyze_data"]
    )
    assert "limited to staff" in text(call("analyst", context=as_staff))
