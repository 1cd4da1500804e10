"""Count the import edges between apps that must depend one way (issue #25).

Usage: .venv/bin/python scripts/layer_edges.py [ROOT] [--list]

An edge is one (importing module, imported module) pair, function-local imports
included: every import statement of every module is read. Imports of
``conversations.llm`` are counted apart: that package is becoming its own
``llm`` app, which every app may import.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

FORBIDDEN = (
    ("registry", "conversations"),
    ("registry", "tools"),
    ("tools", "conversations"),
    ("conversations", "tools"),
)
MOVING = "conversations.llm"


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, module: str) -> set[str]:
    """Every module ``path`` imports, relative imports resolved."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
    return found


def edges(root: Path) -> list[tuple[str, str, str, str]]:
    """``(importing app, imported app, importer, imported)`` for every forbidden edge."""
    found = []
    for source, target in FORBIDDEN:
        for path in sorted((root / source).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            importer = module_name(root, path)
            for imported in imported_modules(path, importer):
                if imported == target or imported.startswith(target + "."):
                    found.append((source, target, importer, imported))
    return found


def counts(root: Path) -> tuple[Counter, Counter]:
    """Forbidden edges per pair, apart from those to ``conversations.llm`` (second)."""
    found = edges(root)
    moving = Counter((s, t) for s, t, _, imported in found if imported.startswith(MOVING))
    counted = Counter((s, t) for s, t, _, imported in found if not imported.startswith(MOVING))
    return counted, moving


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = Path(args[0] if args else Path(__file__).resolve().parent.parent)
    counted, moving = counts(root)
    for source, target in FORBIDDEN:
        print(
            f"{source:>13} -> {target:<13} {counted[(source, target)]:3d}   (+{moving[(source, target)]} to {MOVING})"
        )
    print(f"{'total':>30} {sum(counted.values()):3d}   (+{sum(moving.values())} to {MOVING})")
    if "--list" in sys.argv:
        for _, _, importer, imported in edges(root):
            print(f"  {importer} -> {imported}")


if __name__ == "__main__":
    main()
