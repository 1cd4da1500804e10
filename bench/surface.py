"""Tool-surface assembly cost, and how much of the catalog a typical call carries.

With --tools N tools registered (LiveMCPBench's catalog, padded with copies;
default 1,000), a derived floor (usage logged for 40 tools) and a conversation
whose working set holds 5 tools, it measures `assemble_tools` for a chat turn
(floor, working set, mode rules, registry and tenant checks, capability
filter, schemas) and compares the size of the composed tool array with the
whole catalog's. Tokens are estimated as JSON characters / 4 — the ratio, not
the absolute count, is the figure that matters.

Usage: python bench/surface.py [--tools N] [--calls N] [--json] [--database-url URL]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import _django

DATASET = Path(__file__).resolve().parent.parent.parent / "shared/bench/tool-retrieval/livemcpbench.json"


def tokens(tools: list[dict]) -> int:
    return len(json.dumps(tools, ensure_ascii=False)) // 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    _django.setup(args.database_url)

    from django.utils import timezone
    from tool_search import load_catalog, pad_catalog, register

    from conversations.models import Conversation, WorkingSetEntry
    from registry.models import ToolDefinition, ToolExecutionLog
    from registry.registry import ToolRegistry
    from registry.surface import assemble_tools
    from registry.surface_floor import derive_and_store_tier0

    names = list(register(pad_catalog(load_catalog(args.dataset), args.tools)))
    try:
        now = timezone.now()
        ToolExecutionLog.objects.bulk_create(
            [
                ToolExecutionLog(tool_name=name, tenant_id="bench", success=True, execution_ms=1, created_at=now)
                for i, name in enumerate(names[:40])
                for _ in range(40 - i)
            ]
        )
        derive_and_store_tier0()
        conversation = Conversation.objects.create(tenant_id="bench")
        for name in names[100:105]:
            WorkingSetEntry.objects.create(conversation=conversation, tool_name=name)

        registry = ToolRegistry()
        turn = {"mode": "chat", "conversation_id": conversation.id}
        composed = assemble_tools(registry, "bench", **turn)
        samples = []
        for _ in range(args.calls):
            started = time.perf_counter()
            assemble_tools(registry, "bench", **turn)
            samples.append((time.perf_counter() - started) * 1000)
        samples.sort()
        catalog = registry.get_tools_for_llm("bench")
        results = {
            "registered_tools": len(registry.definitions()),
            "surface_tools": len(composed),
            "assembly_p50_ms": round(statistics.median(samples), 3),
            "assembly_p95_ms": round(samples[int(len(samples) * 0.95)], 3),
            "surface_tokens": tokens(composed),
            "catalog_tokens": tokens(catalog),
            "surface_share_pct": round(100 * tokens(composed) / tokens(catalog), 2),
        }
    finally:
        ToolExecutionLog.objects.filter(tenant_id="bench").delete()
        Conversation.objects.filter(tenant_id="bench").delete()
        ToolDefinition.objects.filter(created_by="bench").delete()
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()
