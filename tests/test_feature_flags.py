"""A deployment turns query_frames (frames_sql_enabled) or query (unified_query_enabled) off.

Both flags are on by default. Off, the tool is neither offered to the model nor found
by search_tools; a call is answered that a flag turned it off (naming the flag), and
list_tools says so; the other SQL tool keeps working.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from registry.context import ToolContext
from tests.conftest import TENANT
from tools.catalog import FLAG_GATED, all_system_tools, apply_feature_flags

pytestmark = pytest.mark.django_db

SQL = "SELECT region, SUM(units) AS units FROM sales GROUP BY region ORDER BY region"


def test_both_flags_are_on_by_default_and_gate_their_tool(settings):
    assert settings.FEATURE_FLAGS["frames_sql_enabled"] is True
    assert settings.FEATURE_FLAGS["unified_query_enabled"] is True
    assert dict(FLAG_GATED) == {"query_frames": "frames_sql_enabled", "query": "unified_query_enabled"}
    assert [e["name"] for e in apply_feature_flags(list(all_system_tools()), settings.FEATURE_FLAGS)] == [
        e["name"] for e in all_system_tools()
    ]


@pytest.mark.parametrize(
    ("flag", "off", "still_on"),
    [("frames_sql_enabled", "query_frames", "query"), ("unified_query_enabled", "query", "query_frames")],
)
def test_a_deployment_with_the_flag_off(settings, registry, flag, off, still_on):
    settings.FEATURE_FLAGS = {**settings.FEATURE_FLAGS, flag: False}
    offered = {tool["name"] for tool in registry.get_tools_for_llm(TENANT)}
    assert off not in offered and still_on in offered
    context = ToolContext(tenant_id=TENANT, user_id="u1")
    refused = registry.execute_tool(off, {"sql": SQL}, context)
    assert refused.content.startswith(
        f"⚠ schema hint: {off} is unavailable here: turned off by the feature flag {flag}"
    )
    assert "Traceback" not in refused.content
    # The other one runs (here it asks for a conversation: no flag stands in its way).
    assert "feature flag" not in registry.execute_tool(still_on, {"sql": SQL}, context).content
    searched = registry.execute_tool("search_tools", {"query": "run SQL over the datasets", "limit": 20}, context)
    assert f"- {off}:" not in searched.content
    out = StringIO()
    call_command("list_tools", "--json", stdout=out)
    rows = {row["name"]: row for row in json.loads(out.getvalue())}
    assert rows[off]["unavailable"] == f"turned off by the feature flag {flag}"
    assert rows[still_on]["unavailable"] is None
