"""The cast of the capability tests: a reviewer of acme, one of globex, and helpers."""

from __future__ import annotations

import pytest

from tests.conftest import OTHER_TENANT, TENANT
from tools.lib.skill_format import MANIFEST, SkillFolder

SKILL_MD = """---
name: regional-sales-summary
description: Summarise units sold per region; use when asked which region sells most.
allowed-tools: preview_data
---
# Regional sales summary

1. Run `scripts/summarise.py` with the sales figures as `rows`.
2. Present the totals with the wording in `assets/wording.md`.
"""
SCRIPT = (
    "totals = {}\n"
    "for row in inputs['rows']:\n"
    "    totals[row['region']] = totals.get(row['region'], 0) + row['units']\n"
    "best = max(totals, key=lambda region: totals[region])\n"
    "result = f'{best} sells most: ' + ', '.join(f'{r}={totals[r]}' for r in sorted(totals))\n"
)
FOLDER = SkillFolder(
    {
        MANIFEST: SKILL_MD.encode(),
        "scripts/summarise.py": SCRIPT.encode(),
        "assets/wording.md": b"Lead with the best region, then the others in alphabetical order.\n",
    }
)
ROWS = [
    {"region": "north", "units": 10},
    {"region": "south", "units": 4},
    {"region": "north", "units": 7},
    {"region": "east", "units": 3},
]


def make_reviewer(username: str, tenant: str = TENANT, *, permissions=("approve_skill", "approve_primitive")):
    """Active staff of ``tenant`` holding ``permissions`` of the tools app."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    from registry.models import TenantMembership

    user = get_user_model().objects.create_user(username, password="pw", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=tenant)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="tools", codename__in=permissions))
    return get_user_model().objects.get(pk=user.pk)


@pytest.fixture(scope="session", autouse=True)
def _zygote_stops_at_the_end():
    from registry.sandbox import service

    yield
    service.shutdown()


@pytest.fixture
def reviewer(db):
    return make_reviewer("skills-reviewer")


@pytest.fixture
def other_reviewer(db):
    return make_reviewer("globex-reviewer", OTHER_TENANT)


@pytest.fixture
def custom_tools_on(settings):
    settings.FEATURE_FLAGS = {**settings.FEATURE_FLAGS, "custom_tools_enabled": True}
    return settings


@pytest.fixture
def approved_skill(reviewer):
    """approved_skill(folder=FOLDER, tenant=TENANT) -> a skill staff approved as it is."""
    from tools import capability_actions as actions

    def make(folder: SkillFolder = FOLDER, tenant: str = TENANT):
        # Made by the user ``tool`` calls as, as if they had written it in chat.
        skill = actions.create_skill(tenant_id=tenant, folder=folder, actor="user:u1")
        approver = reviewer if tenant == TENANT else make_reviewer(f"reviewer-{tenant}", tenant)
        return actions.approve(skill, acting_user=approver)

    return make


@pytest.fixture
def tool(registry):
    """tool(name, inputs, tenant=TENANT, staff=False, user="u1") -> ToolResult through execute_tool.

    The inputs are a dict: these tools take a ``name`` of their own.
    """
    from registry.context import ToolContext

    def run(name: str, inputs: dict | None = None, *, tenant: str = TENANT, staff: bool = False, user: str = "u1"):
        capabilities = frozenset({"staff"}) if staff else frozenset()
        context = ToolContext(tenant_id=tenant, user_id=user, capabilities=capabilities)
        return registry.execute_tool(name, inputs or {}, context)

    return run
