"""Approved custom tools run through execute_tool: output handling, call_tool, flags, secrets."""

import pytest
from django.core.exceptions import ValidationError

from registry.models import SandboxRun
from tests.conftest import OTHER_TENANT, text

pytestmark = pytest.mark.django_db


def test_a_dataframe_result_is_rendered_as_a_table(approved_tool, call):
    approved_tool(
        "by_region",
        "d = pd.DataFrame({'region': ['north', 'south', 'north'], 'units': [10, 4, 7]})\n"
        "result = d.groupby('region')['units'].sum()",
    )
    result = call("by_region")
    assert result.error is None
    assert "north    17" in text(result)


def test_a_dict_with_a_message_is_the_full_response(approved_tool, call):
    approved_tool("summary", "result = {'message': 'all good', 'count': 3}")
    assert "all good" in call("summary").content


def test_anything_else_is_stringified(approved_tool, call):
    approved_tool("answer", "result = 6 * 7")
    assert text(call("answer")).strip() == "42"


def test_inputs_reach_the_code_and_are_validated_first(approved_tool, call):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    approved_tool("double", "result = inputs['n'] * 2", schema)
    assert text(call("double", n=21)).strip() == "42"
    assert call("double", n="x").content.startswith("⚠ schema hint")


def test_call_tool_runs_in_the_host_with_the_callers_identity(approved_tool, call):
    approved_tool("inner", "result = 'inner ran'")
    approved_tool("outer", "result = 'outer saw: ' + call_tool('inner', {})", dependencies=["inner"])
    assert "outer saw: inner ran" in text(call("outer"))


def test_call_tool_cannot_reach_another_tenants_tool(approved_tool, call):
    approved_tool("theirs", "result = 'secret'", tenant=OTHER_TENANT)
    with pytest.raises(ValidationError, match="no tool named 'theirs' is available to tenant 'acme'"):
        approved_tool("probe", "result = call_tool('theirs', {})", dependencies=["theirs"])
    approved_tool("probe", "result = call_tool('theirs', {})")
    assert "secret" not in call("probe").content


def test_nesting_deeper_than_three_is_refused(approved_tool, call):
    approved_tool("recurse", "result = call_tool('recurse', {})", dependencies=["recurse"])
    assert "nest at most 3" in call("recurse").content


def test_a_failure_names_the_layer_and_never_a_traceback(approved_tool, call):
    approved_tool("bad", "result = pd.io.common.os.system('id')")
    result = call("bad")
    assert "[stopped by: language]" in result.error
    assert "Traceback" not in result.content and 'File "' not in result.content


def test_each_run_records_the_layers_that_were_active(approved_tool, call):
    approved_tool("noted", "result = 1")
    call("noted")
    layers = SandboxRun.objects.get(tool_name="noted").layers
    assert layers["language"] and layers["seccomp"] and layers["landlock_abi"] >= 1
    assert layers["own_uid"] and layers["uid"] >= 600_000 and layers["network_namespace"]
    assert layers["pid_namespace"] and layers["mount_namespace"]


def test_with_the_flag_off_custom_tools_are_unavailable(approved_tool, call, settings):
    approved_tool("flagged", "result = 1")
    settings.FEATURE_FLAGS = {**settings.FEATURE_FLAGS, "custom_tools_enabled": False}
    assert "custom tools are not enabled" in call("flagged").content


def test_the_django_secret_key_never_reaches_a_run(approved_tool, call, settings):
    approved_tool("snoop", "result = str(inputs) + str(call_tool)")
    assert settings.SECRET_KEY not in call("snoop").content


def test_the_zygote_was_started_without_djangos_environment():
    from registry.sandbox import service

    with open(f"/proc/{service.zygote().process.pid}/environ", "rb") as environ:
        names = {item.split(b"=", 1)[0] for item in environ.read().split(b"\0") if item}
    assert b"SECRET_KEY" not in names and b"DJANGO_SETTINGS_MODULE" not in names
    assert b"DATABASE_URL" not in names
