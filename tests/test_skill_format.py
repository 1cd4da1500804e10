"""The Agent Skills folder format: SKILL.md frontmatter, a hash over every file, bounded zips."""

from __future__ import annotations

import io
import stat
import zipfile

import pytest

from eunice.bounded_read import InputTooLarge
from tools.lib import skill_format
from tools.lib.skill_format import (
    MANIFEST,
    SkillFolder,
    SkillFormatError,
    archive_hash,
    check_path,
    from_zip,
    parse_manifest,
)

SKILL_MD = """---
name: quarterly-sales-report
description: Build the quarterly sales report from the sales dataset; use when asked for a quarter's figures.
license: Apache-2.0
metadata:
  author: finance-team
  version: "1.2"
allowed-tools: query create_chart export_excel
---
# Quarterly sales report

1. Run `scripts/summarise.py` on the sales dataset.
2. Chart revenue per region with the template in `assets/chart.json`.
"""
FILES = {
    MANIFEST: SKILL_MD.encode(),
    "scripts/summarise.py": b"result = df.groupby('region')['units'].sum()\n",
    "assets/chart.json": b'{"mark": "bar"}',
}


def zipped(entries: dict[str, bytes], *, link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in entries.items():
            archive.writestr(path, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_the_manifest_gives_name_description_and_the_instructions():
    manifest = parse_manifest(SKILL_MD)
    assert manifest.name == "quarterly-sales-report"
    assert manifest.description.startswith("Build the quarterly sales report")
    assert manifest.instructions.startswith("# Quarterly sales report")
    assert manifest.metadata == {"author": "finance-team", "version": "1.2"}
    assert manifest.allowed_tools == ("query", "create_chart", "export_excel")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# no frontmatter", "must start with YAML frontmatter"),
        ("---\nname: a\n", "no closing '---'"),
        ("---\ndescription: d\n---\n", "needs 'name'"),
        ("---\nname: Sales_Report\ndescription: d\n---\n", "name 'Sales_Report' must be lower-case"),
        ("---\nname: a--b\ndescription: d\n---\n", "single hyphens"),
        ("---\nname: ok\n---\n", "needs 'description'"),
        ("---\nname: ok\ndescription: d\nowner: me\n---\n", "unknown frontmatter field 'owner'"),
        ("---\nname: ok\ndescription: [1, 2\n---\n", "not valid YAML"),
        ("---\nname: ok\ndescription: " + "x" * 1025 + "\n---\n", "description is longer than 1024"),
        ("---\nname: &a ok\ndescription: *a\n---\n", "anchors"),
    ],
)
def test_a_bad_manifest_names_the_field_and_the_rule(text, message):
    with pytest.raises(SkillFormatError, match=message):
        parse_manifest(text)


def test_alias_expansion_is_refused_before_it_grows():
    bomb = "---\nname: ok\ndescription: d\nmetadata:\n  a: &a [x, x, x, x]\n  b: [*a, *a, *a, *a]\n---\n"
    with pytest.raises(SkillFormatError, match="anchors|aliases"):
        parse_manifest(bomb)


def test_the_hash_covers_every_file_path_and_byte():
    base = SkillFolder(FILES).content_hash()
    assert SkillFolder(dict(reversed(FILES.items()))).content_hash() == base
    changed_asset = {**FILES, "assets/chart.json": b'{"mark": "line"}'}
    renamed = {k.replace("assets/", "asset/"): v for k, v in FILES.items()}
    added = {**FILES, "assets/notes.txt": b""}
    assert len({base, *(SkillFolder(f).content_hash() for f in (changed_asset, renamed, added))}) == 4


def test_a_folder_round_trips_through_a_zip_named_after_the_skill():
    data = SkillFolder(FILES).to_zip()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert sorted(archive.namelist())[0] == "quarterly-sales-report/SKILL.md"
    again = from_zip(data)
    assert dict(again.files) == FILES
    assert again.content_hash() == SkillFolder(FILES).content_hash()
    assert SkillFolder(FILES).to_zip() == data  # deterministic bytes


def test_an_archives_hash_is_worked_out_once_for_the_same_bytes_and_anew_for_changed_ones(monkeypatch):
    unzipped = []
    monkeypatch.setattr(skill_format, "from_zip", lambda data: unzipped.append(data) or from_zip(data))
    monkeypatch.setattr(skill_format, "_archive_hashes", {})
    data = SkillFolder(FILES).to_zip()
    assert archive_hash(data) == archive_hash(bytes(data)) == SkillFolder(FILES).content_hash()
    changed = SkillFolder({**FILES, "assets/chart.json": b'{"mark": "line"}'}).to_zip()
    assert archive_hash(changed) == from_zip(changed).content_hash() != archive_hash(data)
    assert unzipped == [data, changed]


def test_an_archive_that_breaks_the_format_is_refused_every_time():
    for _ in range(2):
        with pytest.raises(SkillFormatError, match="not a zip file"):
            archive_hash(b"PK\x03\x04 not really")


def test_a_zip_with_skill_md_at_its_top_is_read_too():
    assert dict(from_zip(zipped(FILES)).files) == FILES


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({**FILES, "../escape.py": b"x"}, "leaves the skill folder"),
        ({**FILES, "/etc/cron.d/x": b"x"}, "leaves the skill folder"),
        ({**FILES, "scripts/./a.py": b"x"}, "not normalised"),
        ({"scripts/a.py": b"x"}, "no SKILL.md"),
        ({f"other/{k}": v for k, v in FILES.items()}, "folder 'other' is not the skill's name"),
    ],
)
def test_a_bad_archive_is_refused_with_the_rule(entries, message):
    with pytest.raises(SkillFormatError, match=message):
        from_zip(zipped(entries))


def test_links_are_refused():
    with pytest.raises(SkillFormatError, match="is a link"):
        from_zip(zipped(FILES, link="assets/passwd"))


def test_an_archive_bomb_is_refused_before_it_is_inflated(settings):
    settings.INPUT_LIMITS = {**settings.INPUT_LIMITS, "ARCHIVE_MAX_BYTES": 1 << 20}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MANIFEST, SKILL_MD)
        archive.writestr("assets/zeros.bin", b"\0" * (4 << 20))
    with pytest.raises(InputTooLarge):
        from_zip(buffer.getvalue())


def test_not_a_zip_says_so():
    with pytest.raises(SkillFormatError, match="not a zip file"):
        from_zip(b"PK\x03\x04 not really")


@pytest.mark.parametrize("path", ["", "a\\b", "a/../b", "a//b", "/a", "x" * 300])
def test_paths_are_checked(path):
    with pytest.raises(SkillFormatError):
        check_path(path)


def test_a_written_manifest_reads_back_the_same():
    from tools.lib.skill_format import render_manifest

    manifest = parse_manifest(SKILL_MD)
    assert parse_manifest(render_manifest(manifest)) == manifest
