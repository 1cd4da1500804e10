"""Count the import edges between the apps that issue #25 wants to point one way.

Usage: .venv/bin/python scripts/layer_edges.py [--list]

An edge is one (importing module, imported module) pair, function-local imports
included (grimp reads every import statement). Imports of ``conversations.llm``
are counted apart: that package is moving into its own ``llm`` app.
"""

from __future__ import annotations

import sys
from collections import Counter

import grimp

FORBIDDEN = [("registry", "conversations"), ("registry", "tools"), ("tools", "conversations"),
             ("conversations", "tools")]
MOVING = "conversations.llm"


def edges() -> list[tuple[str, str, str, str]]:
    graph = grimp.build_graph("registry", "tools", "conversations", include_external_packages=False)
    found = []
    for source, target in FORBIDDEN:
        for importer in graph.modules:
            if importer != source and not importer.startswith(source + "."):
                continue
            for imported in graph.find_modules_directly_imported_by(importer):
                if imported == target or imported.startswith(target + "."):
                    found.append((source, target, importer, imported))
    return found


def main() -> None:
    found = edges()
    counted = Counter((s, t) for s, t, _, imported in found if not imported.startswith(MOVING))
    moving = Counter((s, t) for s, t, _, imported in found if imported.startswith(MOVING))
    for source, target in FORBIDDEN:
        print(f"{source:>13} -> {target:<13} {counted[(source, target)]:3d}"
              f"   (+{moving[(source, target)]} to {MOVING})")
    print(f"{'total':>30} {sum(counted.values()):3d}   (+{sum(moving.values())} to {MOVING})")
    if "--list" in sys.argv:
        for source, target, importer, imported in sorted(found):
            print(f"  {importer} -> {imported}")


if __name__ == "__main__":
    main()
