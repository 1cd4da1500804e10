"""convene, search_self_code, load_telemetry and create_observation are seeded with the
catalog, approved, and listed for a tenant like every system tool."""

import json

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db

MINE = {
    "convene": "utility",
    "search_self_code": "utility",
    "load_telemetry": "data",
    "create_observation": "utility",
}


def test_list_tools_shows_each_of_them_approved_in_its_category(capsys):
    call_command("list_tools", "--tenant", "acme", "--json")
    listed = {t["name"]: t for t in json.loads(capsys.readouterr().out)}

    for name, category in MINE.items():
        assert listed[name]["status"] == "approved" and listed[name]["category"] == category, name
        assert listed[name]["unavailable"] is None, name
