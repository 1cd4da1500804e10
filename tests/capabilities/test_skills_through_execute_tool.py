"""Skills through execute_tool: created by the model, used only as staff approved them, per tenant."""

from __future__ import annotations

import pytest

from tests.capabilities.conftest import FOLDER, ROWS, SCRIPT
from tests.conftest import OTHER_TENANT, text
from tools.lib.skill_format import MANIFEST, SkillFolder
from tools.models import CapabilityStatus, Skill

pytestmark = pytest.mark.django_db(transaction=True)

NEW_SKILL = {
    "name": "weekly-standup-notes",
    "description": "Write the weekly stand-up notes; use when asked for this week's summary.",
    "instructions": "1. Read `assets/template.md`.\n2. Fill in each section from the conversation.",
    "files": {"assets/template.md": "## Done\n## Next\n## Blocked\n"},
}


def test_a_skill_the_model_creates_waits_for_a_staff_approval(tool):
    saved = tool("create_skill", NEW_SKILL)
    assert "Saved skill weekly-standup-notes (2 file(s)" in saved.content
    assert "staff member must approve it" in saved.content
    skill = Skill.objects.get(name="weekly-standup-notes")
    assert skill.status == CapabilityStatus.PENDING and skill.approved_hash == ""
    refused = tool("use_skill", {"name": "weekly-standup-notes"})
    assert refused.content.startswith("⚠ schema hint")
    assert "waits for a staff member to approve its current files" in refused.content


def test_an_approved_skill_loads_its_instructions_and_names_its_files(approved_skill, tool):
    approved_skill()
    loaded = text(tool("use_skill", {"name": "regional-sales-summary"}))
    assert loaded.startswith("# Skill regional-sales-summary")
    assert "1. Run `scripts/summarise.py`" in loaded
    assert "- assets/wording.md (" in loaded and "- scripts/summarise.py (" in loaded
    assert "Tools its scripts may call: preview_data" in loaded


def test_without_a_name_only_approved_skills_are_listed_with_their_descriptions(approved_skill, tool):
    approved_skill()
    tool("create_skill", NEW_SKILL)
    listed = text(tool("use_skill"))
    assert "- regional-sales-summary: Summarise units sold per region" in listed
    assert "weekly-standup-notes" not in listed


def test_an_unknown_name_is_a_hint_with_the_closest_names(approved_skill, tool):
    approved_skill()
    hint = tool("use_skill", {"name": "regional-sales-sumary"})
    assert hint.content.startswith("⚠ fetch hint: no skill named 'regional-sales-sumary'")
    assert "regional-sales-summary" in hint.content


def test_a_bad_name_or_a_path_outside_the_folder_is_a_hint_naming_the_field(tool):
    bad_name = tool("create_skill", {**NEW_SKILL, "name": "Weekly_Notes"})
    assert bad_name.content.startswith("⚠ schema hint") and "name" in bad_name.content
    escaping = tool("create_skill", {**NEW_SKILL, "files": {"../../etc/cron.d/x": "boom"}})
    assert escaping.content.startswith("⚠ schema hint")
    assert "leaves the skill folder" in escaping.content
    manifest = tool("create_skill", {**NEW_SKILL, "files": {MANIFEST: "---\nname: x\n---\n"}})
    assert "SKILL.md is written from name, description and instructions" in manifest.content
    assert not Skill.objects.exists()


def test_creating_a_name_twice_points_to_update_skill(tool):
    tool("create_skill", NEW_SKILL)
    again = tool("create_skill", NEW_SKILL)
    assert again.content.startswith("⚠ schema hint") and "change it with update_skill" in again.content


def test_an_edit_after_approval_sends_the_skill_back_to_review(approved_skill, tool):
    approved_skill()
    edited = tool(
        "update_skill", {"name": "regional-sales-summary", "files": {"scripts/summarise.py": "result = 'changed'"}}
    )
    assert "waits for a staff member's approval again" in edited.content
    assert "waits for a staff member" in tool("use_skill", {"name": "regional-sales-summary"}).content
    unchanged = tool(
        "update_skill", {"name": "regional-sales-summary", "files": {"scripts/summarise.py": "result = 'changed'"}}
    )
    assert "is unchanged" in unchanged.content


def test_only_its_author_or_staff_change_a_skill(approved_skill, tool):
    approved_skill()
    change = {"name": "regional-sales-summary", "description": "Totals per region, my way."}
    refused = tool("update_skill", change, user="u2")
    assert refused.content.startswith("✗") and "was made by someone else" in refused.content
    assert Skill.objects.get().is_usable()
    assert "waits for a staff member's approval again" in tool("update_skill", change, user="u2", staff=True).content


def test_update_skill_deletes_a_file_with_null_and_keeps_the_rest(approved_skill, tool):
    approved_skill()
    tool(
        "update_skill",
        {"name": "regional-sales-summary", "files": {"assets/wording.md": None}, "description": "Totals per region."},
    )
    folder = Skill.objects.get(name="regional-sales-summary").folder()
    assert sorted(folder.files) == [MANIFEST, "scripts/summarise.py"]
    again = tool("update_skill", {"name": "regional-sales-summary", "files": {"assets/wording.md": None}})
    assert again.content.startswith("⚠ fetch hint: files: 'assets/wording.md' is not in the skill")
    assert folder.manifest.description == "Totals per region."
    assert folder.manifest.instructions.startswith("# Regional sales summary")


def test_a_bulk_update_after_approval_does_not_slip_past_it(approved_skill, tool):
    approved_skill()
    tampered = SkillFolder({**FOLDER.files, "scripts/summarise.py": b"result = 'tampered'"})
    Skill.objects.filter(name="regional-sales-summary").update(archive=tampered.to_zip())
    assert "waiting for a staff member" in tool("use_skill", {"name": "regional-sales-summary"}).content
    assert (
        "tampered"
        not in tool("read_skill_asset", {"name": "regional-sales-summary", "path": "scripts/summarise.py"}).content
    )


def test_another_tenants_skill_is_never_listed_loaded_read_or_run(approved_skill, tool, custom_tools_on):
    approved_skill(tenant=OTHER_TENANT)
    assert "regional-sales-summary" not in tool("use_skill").content
    assert "use_skill is unavailable here: this workspace has no approved skill yet" in tool("use_skill").content
    own = FOLDER.files[MANIFEST].replace(b"name: regional-sales-summary", b"name: our-own-summary")
    approved_skill(SkillFolder({**FOLDER.files, MANIFEST: own}))  # the tools are offered here now
    for name, args in [
        ("use_skill", {}),
        ("read_skill_asset", {"path": "assets/wording.md"}),
        ("run_skill_script", {"script": "scripts/summarise.py"}),
        ("update_skill", {"description": "mine now"}),
    ]:
        refused = tool(name, {"name": "regional-sales-summary", **args})
        assert refused.content.startswith("⚠ fetch hint: no skill named 'regional-sales-summary'"), name
    assert Skill.objects.get(tenant_id=OTHER_TENANT).description.startswith("Summarise units")


def test_read_skill_asset_reads_a_file_and_names_the_ones_there(approved_skill, tool):
    approved_skill()
    assert text(tool("read_skill_asset", {"name": "regional-sales-summary", "path": "assets/wording.md"})).startswith(
        "Lead with the best region"
    )
    missing = tool("read_skill_asset", {"name": "regional-sales-summary", "path": "assets/wordng.md"})
    assert missing.content.startswith("⚠ fetch hint: path: the skill has no file 'assets/wordng.md'")
    assert "assets/wording.md" in missing.content
    outside = tool("read_skill_asset", {"name": "regional-sales-summary", "path": "../secrets.txt"})
    assert outside.content.startswith("⚠ schema hint: path:")


def test_a_long_asset_is_read_in_parts(approved_skill, tool):
    long = SkillFolder({**FOLDER.files, "assets/reference.md": ("x" * 25_000 + "END").encode()})
    approved_skill(long)
    first = text(tool("read_skill_asset", {"name": "regional-sales-summary", "path": "assets/reference.md"}))
    assert "read_skill_asset with offset 20000" in first
    rest = text(
        tool("read_skill_asset", {"name": "regional-sales-summary", "path": "assets/reference.md", "offset": 20_000})
    )
    assert rest.endswith("END")


def test_an_approved_script_runs_in_the_sandbox_on_the_args(approved_skill, tool, custom_tools_on):
    approved_skill()
    ran = tool(
        "run_skill_script", {"name": "regional-sales-summary", "script": "scripts/summarise.py", "args": {"rows": ROWS}}
    )
    assert text(ran).strip() == "north sells most: east=3, north=17, south=4"


def test_a_script_is_held_to_the_language_policy_and_fails_as_a_hint(approved_skill, tool, custom_tools_on):
    hostile = SkillFolder({**FOLDER.files, "scripts/summarise.py": b"result = ().__class__.__base__"})
    approved_skill(hostile)
    refused = tool("run_skill_script", {"name": "regional-sales-summary", "script": "scripts/summarise.py"})
    assert refused.content.startswith("⚠ schema hint: the script failed")
    assert "Traceback" not in refused.content


def test_a_script_calls_only_the_tools_the_skill_allows(approved_skill, tool, custom_tools_on):
    calls = SkillFolder(
        {
            **FOLDER.files,
            "scripts/summarise.py": b"result = call_tool('list_entities', {})",
            "scripts/allowed.py": b"result = call_tool('preview_data', {'dataset': 'nothing'})[:40]",
        }
    )
    approved_skill(calls)
    refused = tool("run_skill_script", {"name": "regional-sales-summary", "script": "scripts/summarise.py"})
    assert "call_tool('list_entities') is refused" in text(refused)
    allowed = tool("run_skill_script", {"name": "regional-sales-summary", "script": "scripts/allowed.py"})
    # preview_data ran (and asked for a conversation): the skill's allowed-tools let it through.
    assert "NoConversation" in text(allowed) and "is refused" not in text(allowed)


def test_only_python_scripts_run_and_only_with_custom_tools_on(approved_skill, tool, settings):
    approved_skill()
    off = tool("run_skill_script", {"name": "regional-sales-summary", "script": "scripts/summarise.py"})
    assert off.content.startswith("⚠ schema hint: run_skill_script is unavailable here")
    assert "EUNICE_CUSTOM_TOOLS" in off.content
    settings.FEATURE_FLAGS = {**settings.FEATURE_FLAGS, "custom_tools_enabled": True}
    markdown = tool("run_skill_script", {"name": "regional-sales-summary", "script": "assets/wording.md"})
    assert markdown.content.startswith("⚠ schema hint: script: 'assets/wording.md' is not a Python (.py) file")


def test_the_script_text_is_the_one_approved(approved_skill):
    skill = approved_skill()
    assert skill.folder().files["scripts/summarise.py"].decode() == SCRIPT
