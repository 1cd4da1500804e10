"""The apps depend one way: registry imports neither conversations nor tools, and
conversations reaches tools only through the registry (scripts/layer_edges.py)."""

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
counts = runpy.run_path(str(ROOT / "scripts" / "layer_edges.py"))["counts"]


def test_the_registry_imports_neither_conversations_nor_tools():
    counted, _ = counts(ROOT)
    assert counted[("registry", "conversations")] == 0
    assert counted[("registry", "tools")] == 0


def test_conversations_imports_no_tool_module():
    counted, _ = counts(ROOT)
    assert counted[("conversations", "tools")] == 0
