"""Skills load progressively (the Agent Skills format's rule): every model call is told the
tenant's approved skills by name and description in its [CURRENT_STATE] block, and the
instructions come only with use_skill. A skill waiting for review, one changed since its
approval, and another tenant's are never named.

The turns run through the real anthropic SDK against the scripted Messages API server.
"""

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from conversations.models import WorkingSetEntry
from tests.capabilities.conftest import FOLDER, make_reviewer
from tests.conftest import OTHER_TENANT, TENANT
from tests.conversations.test_subtasks_are_their_own import state_block
from tools import capability_actions as actions
from tools.lib.skill_format import MANIFEST, SkillFolder
from tools.models import Skill

pytestmark = pytest.mark.django_db(transaction=True)

DESCRIPTION = "Summarise units sold per region; use when asked which region sells most."


def folder(name: str, description: str) -> SkillFolder:
    manifest = f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nSECRET-BODY of {name}.\n"
    return SkillFolder({**FOLDER.files, MANIFEST: manifest.encode()})


def approved(tenant: str, name: str, description: str) -> Skill:
    skill = actions.create_skill(tenant_id=tenant, folder=folder(name, description), actor="user:u1")
    return actions.approve(skill, acting_user=make_reviewer(f"reviewer-{name}", tenant))


@pytest.fixture
def shelf(db):
    """acme's approved skill, beside one waiting for review, one changed since its approval
    (a bulk update of the row), and globex's approved one."""
    approved(TENANT, "regional-sales-summary", DESCRIPTION)
    actions.create_skill(tenant_id=TENANT, folder=folder("pending-one", "Not reviewed yet."), actor="user:u1")
    stale = approved(TENANT, "stale-one", "Approved, then changed.")
    Skill.objects.filter(pk=stale.pk).update(archive=folder("stale-one", "Changed behind the review.").to_zip())
    approved(OTHER_TENANT, "globex-secret", "Globex only.")


def test_each_call_names_the_approved_skills_and_use_skill_brings_the_body(model, conversation, user, shelf):
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="use_skill")
    server = model(
        [
            {"tool_uses": [{"name": "use_skill", "input": {"name": "regional-sales-summary"}, "id": "s1"}]},
            {
                "text": ["North sells most."],
                "expect": {"tool_result_contains": "SECRET-BODY of regional-sales-summary"},
            },
        ]
    )

    async_to_sync(run_turn)(conversation, text="Which region sells most?", user=user)

    first, after = (state_block(request) for request in server.requests)
    assert f"  - regional-sales-summary: {DESCRIPTION}" in first and "use_skill" in first
    assert "SECRET-BODY" not in first  # only the name and description are resident
    for never in ("pending-one", "stale-one", "globex-secret"):
        assert never not in first and never not in after, never


def test_without_an_approved_skill_the_state_block_says_nothing_of_skills(model, conversation, user):
    server = model([{"text": ["Hello."]}])

    async_to_sync(run_turn)(conversation, text="Hi", user=user)

    assert "skills" not in state_block(server.requests[0])
