"""Staff approve a skill or primitive as it is: permission, tenant scope, the hash, a history row."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from tests.capabilities.conftest import FOLDER, make_reviewer
from tests.conftest import OTHER_TENANT, TENANT
from tools import capability_actions as actions
from tools.lib.skill_format import SkillFolder
from tools.models import CapabilityReview, CapabilityStatus, Skill

pytestmark = pytest.mark.django_db


@pytest.fixture
def pending():
    return actions.create_skill(tenant_id=TENANT, folder=FOLDER, actor="model")


def test_approval_stores_the_hash_of_every_file(pending, reviewer):
    approved = actions.approve(pending, acting_user=reviewer)
    assert approved.status == CapabilityStatus.APPROVED
    assert approved.approved_hash == FOLDER.content_hash() == approved.compute_hash()
    assert approved.is_usable()


@pytest.mark.parametrize("path", ["SKILL.md", "scripts/summarise.py", "assets/wording.md", "assets/new.txt"])
def test_changing_any_file_ends_the_approval(pending, reviewer, path):
    actions.approve(pending, acting_user=reviewer)
    changed = SkillFolder({**FOLDER.files, path: FOLDER.files.get(path, b"") + b"\n<!-- changed -->\n"})
    Skill.objects.filter(pk=pending.pk).update(archive=changed.to_zip())
    assert not Skill.objects.get(pk=pending.pk).is_usable()


def test_only_active_staff_with_the_permission_may_approve(pending, django_user_model):
    plain = django_user_model.objects.create_user("plain", password="pw")
    with pytest.raises(PermissionDenied, match="tools.approve_skill"):
        actions.approve(pending, acting_user=plain)
    staff_without = make_reviewer("no-permission", permissions=())
    with pytest.raises(PermissionDenied, match="tools.approve_skill"):
        actions.approve(pending, acting_user=staff_without)
    assert Skill.objects.get(pk=pending.pk).status == CapabilityStatus.PENDING


def test_staff_of_another_tenant_cannot_approve_or_reject(pending, other_reviewer):
    with pytest.raises(PermissionDenied, match=f"belongs to tenant '{TENANT}'"):
        actions.approve(pending, acting_user=other_reviewer)
    with pytest.raises(PermissionDenied):
        actions.reject(pending, acting_user=other_reviewer, reason="not ours to keep")
    assert OTHER_TENANT != TENANT and Skill.objects.get(pk=pending.pk).status == CapabilityStatus.PENDING


def test_a_skill_that_changed_since_the_reviewer_opened_it_is_not_approved(pending, reviewer):
    seen = pending.content_hash
    actions.update_skill(pending, folder=SkillFolder({**FOLDER.files, "assets/extra.md": b"late"}), actor="model")
    with pytest.raises(actions.CapabilityConflict, match="changed since it was opened"):
        actions.approve(pending, acting_user=reviewer, expected_hash=seen)


def test_a_rejection_needs_a_reason_and_is_kept(pending, reviewer):
    with pytest.raises(ValidationError, match="needs a reason"):
        actions.reject(pending, acting_user=reviewer, reason="  ")
    rejected = actions.reject(pending, acting_user=reviewer, reason="the script reads every region's data")
    assert rejected.status == CapabilityStatus.REJECTED and rejected.approved_hash == ""


def test_every_action_leaves_a_history_row_with_who_and_which_hash(pending, reviewer):
    actions.approve(pending, acting_user=reviewer)
    actions.update_skill(pending, folder=SkillFolder({**FOLDER.files, "assets/extra.md": b"x"}), actor="user:7")
    history = list(CapabilityReview.objects.filter(name=pending.name).order_by("pk"))
    assert [(row.action, row.actor) for row in history] == [
        ("create", "model"),
        ("approve", reviewer.username),
        ("edit", "user:7"),
    ]
    assert history[1].acting_user == reviewer and history[1].content_hash == FOLDER.content_hash()
    assert history[2].content_hash != history[1].content_hash
