"""Each tool of issues #35 and #36 has a row of its own in a tool table of the docs: a
Markdown table line whose first cell names it, as the other catalog tools have."""

from __future__ import annotations

from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"

ISSUE_TOOLS = (
    # 35: the capability layer
    "search_catalog",
    "use_skill",
    "create_skill",
    "update_skill",
    "run_skill_script",
    "read_skill_asset",
    "create_primitive",
    "validate_primitive",
    "call_primitive",
    # 36: the generic tools
    "convene",
    "search_self_code",
    "create_kit",
    "search_kits",
    "build_co_occurrence",
    "discover_clusters",
    "load_telemetry",
    "create_observation",
)


def first_cells() -> list[str]:
    """The first cell of every table row in the docs."""
    cells = []
    for page in sorted(DOCS.glob("*.md")):
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("|") and line.count("|") >= 3:
                cells.append(line.split("|")[1])
    return cells


@pytest.mark.parametrize("tool", ISSUE_TOOLS)
def test_the_tool_has_a_row_in_a_docs_tool_table(tool):
    assert any(f"`{tool}`" in cell for cell in first_cells()), f"no docs table row names {tool}"
