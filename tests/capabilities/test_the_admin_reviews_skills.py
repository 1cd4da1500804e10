"""Staff review skills in the admin: the content to read, approve and reject as actions, a zip to download."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.urls import reverse

from tests.capabilities.conftest import FOLDER, make_reviewer
from tests.conftest import OTHER_TENANT, TENANT
from tools import capability_actions as actions
from tools.models import CapabilityStatus, Skill

pytestmark = pytest.mark.django_db

ADMIN_PERMISSIONS = ("approve_skill", "view_skill")


@pytest.fixture
def pending():
    return actions.create_skill(tenant_id=TENANT, folder=FOLDER, actor="model")


@pytest.fixture
def staff_client(client):
    client.force_login(make_reviewer("admin-reviewer", permissions=ADMIN_PERMISSIONS))
    return client


def act(client, action: str, skill: Skill, reason: str = ""):
    return client.post(
        reverse("admin:tools_skill_changelist"),
        {"action": action, "_selected_action": [skill.pk], "reason": reason},
        follow=True,
    )


def test_the_review_page_shows_every_file(staff_client, pending):
    page = staff_client.get(reverse("admin:tools_skill_change", args=[pending.pk])).content.decode()
    assert "name: regional-sales-summary" in page
    assert "scripts/summarise.py" in page and "totals[row[&#x27;region&#x27;]]" in page
    assert pending.content_hash in page


def test_approving_in_the_admin_makes_the_skill_usable(staff_client, pending):
    said = act(staff_client, "approve_selected", pending).content.decode()
    assert f"Skill regional-sales-summary is approved (hash {pending.content_hash[:12]})" in said
    assert Skill.objects.get(pk=pending.pk).is_usable()


def test_rejecting_needs_a_reason(staff_client, pending):
    assert "a rejection needs a reason" in act(staff_client, "reject_selected", pending).content.decode()
    act(staff_client, "reject_selected", pending, reason="asks for every region's raw rows")
    skill = Skill.objects.get(pk=pending.pk)
    assert skill.status == CapabilityStatus.REJECTED and skill.rejection_reason == "asks for every region's raw rows"


def test_staff_of_another_tenant_never_see_the_skill(client, pending):
    client.force_login(make_reviewer("globex-admin", OTHER_TENANT, permissions=ADMIN_PERMISSIONS))
    assert "regional-sales-summary" not in client.get(reverse("admin:tools_skill_changelist")).content.decode()
    assert "Skill regional-sales-summary is approved" not in act(client, "approve_selected", pending).content.decode()
    assert Skill.objects.get(pk=pending.pk).status == CapabilityStatus.PENDING


def test_a_skill_downloads_as_its_zip(staff_client, pending):
    response = act(staff_client, "export_zip", pending)
    assert response["Content-Disposition"] == 'attachment; filename="regional-sales-summary.zip"'
    names = zipfile.ZipFile(io.BytesIO(response.content)).namelist()
    assert "regional-sales-summary/scripts/summarise.py" in names
