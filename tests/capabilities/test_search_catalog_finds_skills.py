"""search_catalog finds the tenant's approved skills by meaning, and no other skill."""

from __future__ import annotations

import pytest

from tests.capabilities.conftest import FOLDER
from tests.conftest import OTHER_TENANT, TENANT, text
from tools import capability_actions as actions
from tools.catalog_search import clear_cache
from tools.lib.skill_format import MANIFEST, SkillFolder
from tools.models import Skill

pytestmark = pytest.mark.django_db(transaction=True)

DRAFT = SkillFolder(
    {MANIFEST: b"---\nname: invoice-chaser\ndescription: Chase unpaid invoices by email.\n---\nSteps.\n"}
)


@pytest.fixture(autouse=True)
def _fresh_indexes():
    clear_cache()
    yield
    clear_cache()


def search(tool, query: str, tenant: str = TENANT) -> str:
    return tool("search_catalog", {"query": query, "kinds": ["skill"]}, tenant=tenant).content


def test_an_approved_skill_is_found_with_the_call_that_loads_it(approved_skill, tool):
    approved_skill()
    found = text(tool("search_catalog", {"query": "which region sells the most units"}))
    assert "skill 'regional-sales-summary'" in found
    assert "use: use_skill {name: 'regional-sales-summary'}" in found


def test_a_pending_or_changed_skill_and_another_tenants_are_not_found(approved_skill, tool):
    actions.create_skill(tenant_id=TENANT, folder=DRAFT, actor="model")
    assert "invoice-chaser" not in search(tool, "chase unpaid invoices")
    approved_skill(tenant=OTHER_TENANT)
    assert "regional-sales-summary" not in search(tool, "which region sells the most units")
    assert "regional-sales-summary" in search(tool, "which region sells the most units", OTHER_TENANT)
    tampered = SkillFolder({**FOLDER.files, "assets/wording.md": b"changed"})
    Skill.objects.filter(tenant_id=OTHER_TENANT).update(archive=tampered.to_zip())
    clear_cache()
    assert "regional-sales-summary" not in search(tool, "which region sells the most units", OTHER_TENANT)
