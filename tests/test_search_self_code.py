"""search_self_code: questions about Eunice's own source, answered from its tracked source
files only (never var/, .env, settings, uploads or a symlink out), bounded and read-only."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import text
from tools.lib.source_index import MAX_FILE_BYTES

pytestmark = pytest.mark.django_db

NEEDLE = "zanzibar_marmalade"


@pytest.fixture
def tree(settings, tmp_path):
    """A project root with one source file and, beside it, everything that is not source."""
    root = tmp_path / "site"
    files = {
        "eunice/views.py": f"def view():\n    return '{NEEDLE}'\n",
        "eunice/settings.py": f"SECRET_KEY = '{NEEDLE}'\n",
        "eunice/prod_settings.py": f"DATABASE_PASSWORD = '{NEEDLE}'\n",
        ".env": f"SECRET_KEY={NEEDLE}\n",
        "var/files/t1/report.py": f"# {NEEDLE}\n",
        "tools/uploads/pasted.py": f"# {NEEDLE}\n",
        "tools/.git/config": f"{NEEDLE}\n",
        "tests/test_views.py": f"# {NEEDLE}\n",
        "tools/data.parquet": f"{NEEDLE}\n",
        "tools/huge.py": f"# {NEEDLE}\n" + "x = 1\n" * MAX_FILE_BYTES,
    }
    for path, body in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(body)
    outside = tmp_path / "elsewhere.py"
    outside.write_text(f"# {NEEDLE}\n")
    (root / "registry").mkdir()
    (root / "registry" / "linked.py").symlink_to(outside)
    (root / "docs").symlink_to(tmp_path, target_is_directory=True)
    settings.BASE_DIR = root
    return root


def test_a_question_finds_the_file_and_line_that_answer_it(call):
    result = call("search_self_code", query="where is the order of the system tools, TOOL_ORDER")

    assert result.error is None, result.content
    first = text(result).split("\n\n")[0]
    assert first.startswith("tools/catalog.py") and "TOOL_ORDER: tuple[str, ...] = (" in first


def test_a_search_can_be_narrowed_to_a_directory(call):
    result = call("search_self_code", query="execute_tool", under="conversations")
    paths = [block.split(" ")[0] for block in text(result).split("\n\n")]
    assert paths and all(path.startswith("conversations/") for path in paths)


def test_a_file_is_read_a_stretch_at_a_time(call):
    first = call("search_self_code", read="tools/catalog.py")
    later = call("search_self_code", read="tools/catalog.py", start_line=151)

    assert text(first).startswith("tools/catalog.py, lines 1-150 of ")
    assert '1: """The system tool catalog' in text(first) and "(start_line=151)" in text(first)
    assert "\n151: " in text(later)


def test_only_tracked_source_is_searched_never_data_secrets_settings_or_links_out(call, tree):
    found = call("search_self_code", query=NEEDLE)
    assert [block.split(" ")[0] for block in text(found).split("\n\n")] == ["eunice/views.py"]

    for path in ("eunice/settings.py", "eunice/prod_settings.py", ".env", "var/files/t1/report.py",
                 "tools/uploads/pasted.py", "tests/test_views.py", "registry/linked.py", "docs/elsewhere.py",
                 "../elsewhere.py", "tools/huge.py"):  # fmt: skip
        read = call("search_self_code", read=path)
        assert read.content.startswith(f"⚠ schema hint: read: {path!r} is not one of Eunice's source files"), path
        assert NEEDLE not in read.content


def test_nothing_to_look_for_is_a_hint_naming_the_field(call, tree):
    assert call("search_self_code").content.startswith("⚠ schema hint: query: say what to look for")
    unknown = call("search_self_code", query="view", under="nowhere")
    assert unknown.content.startswith("⚠ schema hint: under: no source under 'nowhere'")
    assert call("search_self_code", read="eunice/views.py", start_line=9).content.startswith(
        "⚠ schema hint: start_line: eunice/views.py has 2 lines"
    )


def test_data_directories_moved_into_the_source_and_denied_names_in_any_case_are_never_read(call, tree, settings):
    """A deployment may put its var, files or scratch directory anywhere, a package included;
    and a denied directory is denied whatever the case of its name."""
    settings.VAR_DIR = tree / "tools" / "state"
    settings.EUNICE_FILES_DIR = tree / "registry" / "files"
    settings.SANDBOX = {**settings.SANDBOX, "SCRATCH_DIR": str(tree / "bench" / "scratch")}
    planted = {
        "tools/state/notes.md": f"{NEEDLE} from the var directory\n",
        "registry/files/t1/upload.txt": f"{NEEDLE} from an upload\n",
        "bench/scratch/run1/out.py": f"# {NEEDLE} from a sandbox run\n",
        "tools/Uploads/pasted.py": f"# {NEEDLE}\n",
        "eunice/MEDIA/pasted.md": f"{NEEDLE}\n",
        "llm/Var/cache.py": f"# {NEEDLE}\n",
    }
    for path, body in planted.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(body)

    found = call("search_self_code", query=NEEDLE)
    assert [block.split(" ")[0] for block in text(found).split("\n\n")] == ["eunice/views.py"]
    for path in planted:
        read = call("search_self_code", read=path)
        assert read.content.startswith(f"⚠ schema hint: read: {path!r} is not one of Eunice's source files"), path
        assert NEEDLE not in read.content


def test_in_a_git_checkout_only_the_files_git_tracks_are_source(call, tree):
    """A scratch file or a local note dropped into a package of a checkout is not Eunice's source."""
    (tree / "tools" / "scratch_notes.md").write_text(f"db password for staging: {NEEDLE}\n")
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "eunice/views.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "views"], check=True)

    found = call("search_self_code", query=NEEDLE)

    assert [block.split(" ")[0] for block in text(found).split("\n\n")] == ["eunice/views.py"]
    read = call("search_self_code", read="tools/scratch_notes.md")
    assert read.content.startswith("⚠ schema hint: read: 'tools/scratch_notes.md' is not one of Eunice's source")
