"""The capability tools are in the catalog list_tools prints, each with its category."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db

CAPABILITY_TOOLS = (
    "use_skill",
    "read_skill_asset",
    "run_skill_script",
    "create_skill",
    "update_skill",
    "create_primitive",
    "validate_primitive",
    "call_primitive",
)


RUNS_CODE = ("run_skill_script", "create_primitive", "validate_primitive", "call_primitive")


def test_list_tools_shows_every_skill_and_primitive_tool(custom_tools_on):
    out = StringIO()
    call_command("list_tools", "--json", stdout=out)
    rows = {row["name"]: row for row in json.loads(out.getvalue())}
    for name in CAPABILITY_TOOLS:
        assert rows[name]["unavailable"] is None, name


def test_list_tools_says_the_tools_that_run_code_wait_for_custom_tools():
    out = StringIO()
    call_command("list_tools", "--json", stdout=out)
    rows = {row["name"]: row for row in json.loads(out.getvalue())}
    for name in RUNS_CODE:
        assert "EUNICE_CUSTOM_TOOLS" in rows[name]["unavailable"], name
    assert rows["create_skill"]["unavailable"] is None and rows["use_skill"]["unavailable"] is None


def test_list_tools_for_a_tenant_says_which_tools_wait_for_a_skill_or_primitive(custom_tools_on):
    out = StringIO()
    call_command("list_tools", "--json", "--tenant", "acme", stdout=out)
    rows = {row["name"]: row for row in json.loads(out.getvalue())}
    assert rows["use_skill"]["unavailable"].startswith("this workspace has no approved skill yet")
    assert rows["validate_primitive"]["unavailable"].startswith("this workspace has no primitive yet")
    assert rows["create_skill"]["unavailable"] is None and rows["create_primitive"]["unavailable"] is None
