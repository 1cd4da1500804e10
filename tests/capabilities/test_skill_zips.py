"""A skill folder imports and exports as a zip: bounded, no path outside the folder."""

from __future__ import annotations

import io
import zipfile
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.capabilities.conftest import FOLDER
from tests.conftest import TENANT
from tools import capability_actions as actions
from tools.lib.skill_format import MAX_FILES, SkillFormatError, from_zip
from tools.models import CapabilityStatus, Skill

pytestmark = pytest.mark.django_db


def zipped(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in entries.items():
            archive.writestr(path, data)
    return buffer.getvalue()


def test_an_exported_skill_imports_back_with_the_same_hash(approved_skill):
    skill = approved_skill()
    data = actions.export_skill(skill)
    assert {name.split("/", 1)[0] for name in zipfile.ZipFile(io.BytesIO(data)).namelist()} == {skill.name}
    assert from_zip(data).content_hash() == skill.approved_hash
    # Importing the same files again changes nothing: still approved.
    again = actions.import_skill(data, tenant_id=TENANT, actor="cli")
    assert again.pk == skill.pk and again.is_usable()


def test_importing_changed_files_sends_the_skill_back_to_review(approved_skill):
    skill = approved_skill()
    changed = {f"{skill.name}/{path}": data for path, data in FOLDER.files.items()}
    changed[f"{skill.name}/assets/wording.md"] = b"Lead with the worst region."
    imported = actions.import_skill(zipped(changed), tenant_id=TENANT, actor="cli")
    assert imported.pk == skill.pk and imported.status == CapabilityStatus.PENDING and not imported.is_usable()


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"SKILL.md": FOLDER.files["SKILL.md"], "../outside.py": b"x"}, "leaves the skill folder"),
        ({"SKILL.md": FOLDER.files["SKILL.md"], "/etc/cron.d/x": b"x"}, "leaves the skill folder"),
        ({f"f{n}.txt": b"" for n in range(MAX_FILES + 1)}, f"at most {MAX_FILES} files"),
        ({"other-name/SKILL.md": FOLDER.files["SKILL.md"]}, "is not the skill's name"),
        ({"notes.md": b"no manifest"}, "no SKILL.md"),
    ],
)
def test_an_archive_that_breaks_a_rule_is_refused_and_nothing_is_stored(entries, message):
    with pytest.raises(SkillFormatError, match=message):
        actions.import_skill(zipped(entries), tenant_id=TENANT, actor="cli")
    assert not Skill.objects.exists()


def test_the_commands_export_and_import_a_skill(approved_skill, tmp_path):
    approved_skill()
    out = tmp_path / "skill.zip"
    call_command("export_skill", "regional-sales-summary", "--tenant", TENANT, "--out", str(out), stdout=StringIO())
    said = StringIO()
    call_command("import_skill", str(out), "--tenant", "initech", stdout=said)
    assert said.getvalue().startswith("regional-sales-summary: pending")
    assert Skill.objects.get(tenant_id="initech").content_hash == Skill.objects.get(tenant_id=TENANT).approved_hash
    bomb = tmp_path / "bomb.zip"
    bomb.write_bytes(zipped({"SKILL.md": FOLDER.files["SKILL.md"], "big.bin": b"\0" * (3 * 1024 * 1024)}))
    with pytest.raises(CommandError, match="larger than"):
        call_command("import_skill", str(bomb), "--tenant", TENANT)
