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


def test_list_tools_shows_every_skill_and_primitive_tool():
    out = StringIO()
    call_command("list_tools", "--json", stdout=out)
    rows = {row["name"]: row for row in json.loads(out.getvalue())}
    for name in CAPABILITY_TOOLS:
        assert rows[name]["unavailable"] is None, name
