"""Benchmark `search_tools` retrieval through the real, database-backed path.

Usage:
    python bench/tool_search.py --dataset PATH [--scale N] [--json] [--database-url URL]

The dataset is `{"catalog": [{id, name, description, input_schema}],
"queries": [{query, gold: [ids]}]}`. Its tools are registered as approved
tool_definitions rows, named as an MCP server's tools are (`register`), in a throwaway
SQLite database (or DATABASE_URL / --database-url), and every query goes
through `tools.utility.find_tools` — the ranking `search_tools` returns,
with its relevance floor, without itself and without the chat mode's
resident tools (which the model already has) — for an all-tenants caller.
Its tenant (`bench`) is filtered as any tenant is (`ToolRegistry.offered_to`'s
checks): it holds no skill or primitive, as a new workspace does, so the
tools that act on one (`use_skill`, `call_primitive`, …) are not offered.
The catalog is the data set's; `--with-system-tools` seeds Eunice's own
system tools as well, as extra (never gold) candidates, and `--leave-out
a,b,...` then drops some of them again: run with and without an issue's
tools to see what they alone do to recall. `--per-query PATH` writes each
query's top 10 as JSON lines (`query`, `gold`, `ranked`), to compare two
runs query by query.

Metrics (percentages, averaged over queries):
- R@k: the fraction of a query's gold ids found in the top k, i.e.
  |gold ∩ top-k| / |gold|. With one gold id this is the hit rate.
- nDCG@10: binary relevance, ideal DCG over min(|gold|, 10) hits.
- p50 / p95: wall-clock latency of one search in ms, after a warm-up query;
  embed_p50: of that, embedding the query (the rest is the index: BM25,
  dense dot product, fusion, top-k).
- build_s: first search on a fresh registry: every tool embedded and its
  vector stored on its row (model load excluded, reported separately);
  load_s: a new process's first search, from the stored vectors;
  update_ms: re-indexing after one tool's description changes (one embedding).
- machine_reference_ms: fixed pure-Python work timed after the run
  (bench/_machine.py), to tell a slower day from a slower change.
- nonsense_answered: how many of the requests in bench/nonsense_queries.txt
  (keyboard mashing, invented words) still return a tool; the relevance
  floor should keep this at or near zero whatever the ranking does.
- technical_read: how many of the real requests in bench/technical_queries.txt
  (file formats, jargon: "convert xlsx to csv") the floor reads as meaningful,
  so that tools close in meaning are returned, not only those sharing a word;
  the other side of nonsense_answered, and it depends on the catalog's words.

`--scale N` pads the catalog to N tools with copies of its tools under new
ids, to measure latency at that size. The copies have the same text as the
originals, so quality figures at scale are a lower bound.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import _django
from _machine import reference_ms

NONSENSE = Path(__file__).with_name("nonsense_queries.txt")
TECHNICAL = Path(__file__).with_name("technical_queries.txt")


@dataclass(frozen=True)
class Query:
    text: str
    gold: frozenset[str]


@dataclass
class Report:
    dataset: str
    tools: int
    queries: int
    r1: float
    r5: float
    ndcg10: float
    p50_ms: float
    p95_ms: float
    embed_p50_ms: float
    build_s: float
    load_s: float
    update_ms: float
    model_load_s: float
    nonsense_answered: int = 0
    nonsense_queries: int = 0
    technical_read: int = 0
    technical_queries: int = 0
    machine_reference_ms: float = 0.0


@dataclass(frozen=True)
class Tool:
    id: str
    name: str
    description: str
    input_schema: dict | None


def load_catalog(path: Path) -> list[Tool]:
    data = json.loads(path.read_text())
    return [Tool(t["id"], t["name"], t.get("description") or "", t.get("input_schema")) for t in data["catalog"]]


def load_queries(path: Path) -> list[Query]:
    data = json.loads(path.read_text())
    return [Query(q["query"], frozenset(q["gold"])) for q in data["queries"]]


def load_requests(path: Path) -> list[str]:
    """Requests one a line; blank lines and `#` comments skipped."""
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def pad_catalog(tools: Sequence[Tool], size: int) -> list[Tool]:
    """`tools` followed by copies under new ids until there are `size` tools."""
    padded = list(tools)
    n = 0
    while len(padded) < size:
        original = tools[n % len(tools)]
        copy = n // len(tools) + 1
        padded.append(Tool(f"{original.id}~{copy}", original.name, original.description, original.input_schema))
        n += 1
    return padded


def safe_names(tools: Sequence[Tool], taken: set[str] | None = None, prefix: str = "") -> dict[str, str]:
    """Tool id -> a unique provider-safe tool name ([a-zA-Z0-9_-], at most 64 characters)
    starting with ``prefix``, none of them in ``taken`` (names already registered)."""
    names: dict[str, str] = {}
    taken = set(taken or ())
    for tool in tools:
        base = (prefix + re.sub(r"[^a-zA-Z0-9_-]", "_", tool.id))[:56] or "tool"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        names[tool.id] = name
    return names


def register(tools: Sequence[Tool]) -> dict[str, str]:
    """Store the catalog as approved tool rows, named and pointing at their tool as an MCP
    server's rows are (``mcp_<tenant tag>_<server>_<tool>``, ``mcp:<server id>:<tool>``;
    registry.mcp.naming), so that search reads them as it reads a real server's; returns
    name -> dataset id. The descriptions are the data set's as they are: LiveMCPBench's
    already start with their server's name."""
    from registry.mcp.naming import implementation, tenant_tag
    from registry.models import ToolDefinition, ToolStatus, ToolType

    ToolDefinition.objects.filter(created_by="bench").delete()
    taken = set(ToolDefinition.objects.values_list("name", flat=True))
    names = safe_names(tools, taken, prefix=f"mcp_{tenant_tag('bench')}_bench_")
    ToolDefinition.objects.bulk_create(
        [
            ToolDefinition(
                name=names[t.id],
                description=t.description,
                input_schema=t.input_schema or {"type": "object"},
                implementation=implementation(0, t.id),
                tool_type=ToolType.MCP,
                status=ToolStatus.APPROVED,
                category="bench",
                created_by="bench",
            )
            for t in tools
        ],
        batch_size=500,
    )
    return {name: tool_id for tool_id, name in names.items()}


def recall_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    return len(gold.intersection(ranked[:k])) / len(gold)


def ndcg_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(rank + 2) for rank, key in enumerate(ranked[:k]) if key in gold)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(gold), k)))
    return dcg / ideal


def run(tools: Sequence[Tool], queries: Sequence[Query], dataset: str = "", per_query: Path | None = None) -> Report:
    """Register ``tools``, run every query through the registry's search, and measure."""
    from registry.models import ToolDefinition
    from registry.registry import ToolRegistry
    from registry.retrieval import Embedder
    from tools.utility import find_tools

    started = time.perf_counter()
    embedder = Embedder.default()
    model_load = time.perf_counter() - started
    ids = register(tools)

    registry = ToolRegistry()
    started = time.perf_counter()
    registry.tool_search().search(queries[0].text, "bench", 10)
    build = time.perf_counter() - started

    registry = ToolRegistry()  # as a new process would: vectors come from the rows
    started = time.perf_counter()
    registry.tool_search().search(queries[0].text, "bench", 10)
    load = time.perf_counter() - started

    recalls1, recalls5, ndcgs, latencies = [], [], [], []
    rankings = []
    for query in queries:
        started = time.perf_counter()
        hits = find_tools(registry, query.text, "bench", 10)
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = [ids.get(definition.name, definition.name) for definition, _ in hits]
        rankings.append({"query": query.text, "gold": sorted(query.gold), "ranked": ranked})
        recalls1.append(recall_at(ranked, query.gold, 1))
        recalls5.append(recall_at(ranked, query.gold, 5))
        ndcgs.append(ndcg_at(ranked, query.gold, 10))
    latencies.sort()
    if per_query is not None:
        per_query.write_text("".join(json.dumps(row) + "\n" for row in rankings))
    nonsense = load_requests(NONSENSE)
    answered = sum(1 for text in nonsense if find_tools(registry, text, "bench", 10))
    technical = load_requests(TECHNICAL)
    index = registry.tool_search()._synced(registry.definitions())
    read = sum(1 for text in technical if index.reads(text))
    embed_ms = []
    for query in queries[:200]:
        started = time.perf_counter()
        embedder.embed([query.text])
        embed_ms.append((time.perf_counter() - started) * 1000)

    row = ToolDefinition.objects.filter(created_by="bench").first()
    row.description += " Also handles edge cases."
    row.save()
    registry.invalidate()  # what the save signal does for the process-wide registry
    definitions = registry.definitions()
    started = time.perf_counter()
    registry.tool_search()._synced(definitions)
    update = time.perf_counter() - started
    ToolDefinition.objects.filter(created_by="bench").delete()
    return Report(
        dataset=dataset,
        tools=len(tools),
        queries=len(queries),
        r1=round(100 * statistics.fmean(recalls1), 1),
        r5=round(100 * statistics.fmean(recalls5), 1),
        ndcg10=round(100 * statistics.fmean(ndcgs), 1),
        p50_ms=round(latencies[len(latencies) // 2], 2),
        p95_ms=round(latencies[int(len(latencies) * 0.95)], 2),
        embed_p50_ms=round(statistics.median(embed_ms), 2),
        build_s=round(build, 2),
        load_s=round(load, 3),
        update_ms=round(update * 1000, 2),
        model_load_s=round(model_load, 2),
        nonsense_answered=answered,
        nonsense_queries=len(nonsense),
        technical_read=read,
        technical_queries=len(technical),
        machine_reference_ms=reference_ms(),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--scale", type=int, default=0, help="pad the catalog to this many tools")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--database-url")
    parser.add_argument(
        "--with-system-tools", action="store_true", help="seed Eunice's own system tools too, as extra candidates"
    )
    parser.add_argument(
        "--leave-out",
        default="",
        metavar="NAMES",
        help="with --with-system-tools: comma-separated system tools not to seed",
    )
    parser.add_argument("--per-query", type=Path, metavar="PATH", help="write each query's top 10 as JSON lines")
    args = parser.parse_args(argv)
    _django.setup(args.database_url, seed=args.with_system_tools)
    left_out = [name for name in args.leave_out.split(",") if name]
    if left_out:
        from registry.models import ToolDefinition, ToolType

        seeded = set(
            ToolDefinition.objects.filter(tool_type=ToolType.SYSTEM, name__in=left_out).values_list("name", flat=True)
        )
        unknown = sorted(set(left_out) - seeded)
        if unknown:
            parser.error(f"--leave-out: not seeded system tools: {', '.join(unknown)}")
        ToolDefinition.objects.filter(tool_type=ToolType.SYSTEM, name__in=left_out).delete()

    tools = load_catalog(args.dataset)
    if args.scale > len(tools):
        tools = pad_catalog(tools, args.scale)
    report = run(tools, load_queries(args.dataset), dataset=args.dataset.stem, per_query=args.per_query)
    if args.json:
        print(json.dumps(asdict(report)))
    else:
        print(
            f"{report.dataset}: {report.tools} tools, {report.queries} queries\n"
            f"  R@1 {report.r1:.1f}  R@5 {report.r5:.1f}  nDCG@10 {report.ndcg10:.1f}\n"
            f"  nonsense requests answered with a tool: {report.nonsense_answered} of {report.nonsense_queries}\n"
            f"  technical requests read as meaningful: {report.technical_read} of {report.technical_queries}\n"
            f"  query p50 {report.p50_ms:.2f} ms  p95 {report.p95_ms:.2f} ms"
            f"  (embedding the query p50 {report.embed_p50_ms:.2f} ms)\n"
            f"  build {report.build_s:.2f} s (embedding and storing every tool; model load"
            f" {report.model_load_s:.2f} s)  load from stored vectors {report.load_s:.3f} s"
            f"  one-tool update {report.update_ms:.1f} ms\n"
            f"  machine reference {report.machine_reference_ms:.1f} ms (bench/_machine.py; lower is faster)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
