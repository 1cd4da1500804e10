"""Every model call's [CURRENT_STATE] names the tenant's usable skills (tools.skill_shelf.resident).
It checks each against its approval by the SHA-256 the database keeps of the archive as it is
now (``Skill.archive_sha256``), not by reading and hashing every archive each turn; a skill
changed since its approval, by whatever path, is still never named.
"""

from __future__ import annotations

import hashlib

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.capabilities.conftest import FOLDER
from tests.conftest import TENANT
from tools import capability_actions as actions
from tools import skill_shelf
from tools.lib import skill_format
from tools.lib.skill_format import SkillFolder
from tools.models import Skill

pytestmark = pytest.mark.django_db

CHANGED = SkillFolder({**FOLDER.files, "assets/wording.md": b"Lead with the worst region instead.\n"})


@pytest.fixture
def approved(reviewer):
    skill = actions.create_skill(tenant_id=TENANT, folder=FOLDER, actor="model")
    return actions.approve(skill, acting_user=reviewer)


def names() -> list[str]:
    return [name for name, _ in skill_shelf.resident(TENANT, 10)]


def test_a_skill_checked_before_is_named_again_without_reading_its_archive(approved):
    assert names() == [approved.name]
    with CaptureQueriesContext(connection) as queries:
        assert names() == [approved.name]
    assert len(queries) == 1
    assert '"archive"' not in queries[0]["sql"]


def test_a_process_that_never_hashed_the_archive_reads_it_and_checks_it_whole(approved):
    skill_format._archive_hashes.clear()
    assert names() == [approved.name]
    Skill.objects.filter(pk=approved.pk).update(archive=CHANGED.to_zip())
    skill_format._archive_hashes.clear()
    assert names() == []


def test_a_bulk_update_of_the_archive_after_it_was_named_ends_its_naming(approved):
    assert names() == [approved.name]
    Skill.objects.filter(pk=approved.pk).update(archive=CHANGED.to_zip())
    assert names() == []


def test_raw_sql_that_changes_the_archive_ends_its_naming(approved):
    assert names() == [approved.name]
    with connection.cursor() as cursor:
        cursor.execute("UPDATE skills SET archive = %s WHERE id = %s", [CHANGED.to_zip(), approved.pk])
    assert names() == []


def test_changing_it_back_to_what_was_approved_names_it_again(approved):
    Skill.objects.filter(pk=approved.pk).update(archive=CHANGED.to_zip())
    assert names() == []
    Skill.objects.filter(pk=approved.pk).update(archive=FOLDER.to_zip())
    assert names() == [approved.name]


def test_an_edit_and_a_new_approval_name_it_as_approved_again(approved, reviewer):
    actions.update_skill(approved, folder=CHANGED, actor="model")
    assert names() == []
    actions.approve(Skill.objects.get(pk=approved.pk), acting_user=reviewer)
    assert names() == [approved.name]


def test_no_client_can_set_the_archives_digest(approved):
    stored = bytes(Skill.objects.values_list("archive_sha256", flat=True).get(pk=approved.pk))
    forged = hashlib.sha256(CHANGED.to_zip()).digest()
    with pytest.raises(DatabaseError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE skills SET archive_sha256 = %s WHERE id = %s", [forged, approved.pk])
    assert bytes(Skill.objects.values_list("archive_sha256", flat=True).get(pk=approved.pk)) == stored
    assert stored == hashlib.sha256(FOLDER.to_zip()).digest()


def test_the_other_lists_of_usable_skills_are_checked_the_same_way(approved):
    every = Skill.objects.filter(tenant_id=TENANT)
    assert [skill.name for skill in skill_shelf.usable(every)] == [approved.name]
    with CaptureQueriesContext(connection) as queries:
        assert [skill.name for skill in skill_shelf.usable(every)] == [approved.name]
    assert len(queries) == 1 and '"archive"' not in queries[0]["sql"]
    Skill.objects.filter(pk=approved.pk).update(archive=CHANGED.to_zip())
    assert skill_shelf.usable(every) == []


def test_a_skill_sent_back_to_review_waits_even_with_its_approved_files_again(approved):
    actions.update_skill(approved, folder=CHANGED, actor="model")
    Skill.objects.filter(pk=approved.pk).update(archive=FOLDER.to_zip())  # the approved bytes, still pending
    assert skill_shelf.usable(Skill.objects.filter(tenant_id=TENANT)) == []
    assert not Skill.objects.get(pk=approved.pk).is_usable()
