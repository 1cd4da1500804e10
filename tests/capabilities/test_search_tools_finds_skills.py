"""search_tools finds the tenant's approved skills beside the tools, by meaning, and pages
use_skill in to load one; a skill waiting for review or another tenant's is never named."""

from __future__ import annotations

import pytest

from conversations.models import Conversation, WorkingSetEntry
from registry.context import ToolContext
from tests.conftest import OTHER_TENANT, TENANT
from tools import capability_actions as actions
from tools import skill_shelf
from tools.lib.skill_format import MANIFEST, SkillFolder

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "which region sells the most units"
DRAFT = SkillFolder(
    {MANIFEST: b"---\nname: region-ranker\ndescription: Rank regions by units sold, best first.\n---\nSteps.\n"}
)


@pytest.fixture(autouse=True)
def _fresh_indexes():
    skill_shelf.clear_cache()
    yield
    skill_shelf.clear_cache()


def search(registry, tenant: str = TENANT, conversation_id: str | None = None):
    context = ToolContext(tenant_id=tenant, user_id="u1", conversation_id=conversation_id)
    return registry.execute_tool("search_tools", {"query": QUERY}, context)


def test_an_approved_skill_is_found_beside_the_tools_and_use_skill_is_paged_in(approved_skill, registry):
    approved_skill()
    conversation = Conversation.objects.create(tenant_id=TENANT, title="Sales")

    found = search(registry, conversation_id=conversation.id)

    assert found.error is None, found.content
    skills = found.content.split("Skills of this team that fit")[1]
    assert "- skill regional-sales-summary: Summarise units sold per region" in skills
    assert "use_skill" in WorkingSetEntry.objects.filter(conversation=conversation).values_list("tool_name", flat=True)


def test_a_pending_skill_or_another_tenants_is_never_named(approved_skill, registry):
    actions.create_skill(tenant_id=TENANT, folder=DRAFT, actor="model")
    approved_skill(tenant=OTHER_TENANT)

    found = search(registry)

    assert found.error is None, found.content
    assert "Skills of this team" not in found.content
    assert "region-ranker" not in found.content and "regional-sales-summary" not in found.content
    assert "regional-sales-summary" in search(registry, tenant=OTHER_TENANT).content
