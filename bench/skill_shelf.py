"""What naming a tenant's skills costs: search_tools with and without approved skills,
and the state block's resident list.

Prints ms/call, each the median over --calls calls (default 50) after a warm-up, each
search with a request of its own (a repeated one would time the kept query vector):
  search_tools_no_skills_ms    execute_tool("search_tools") for a tenant with no approved
                               skill: the tool ranking plus one aggregate query
  search_tools_skills_ms       the same for a tenant with --skills approved skills (index
                               warm): the ranking plus the skill index's search
  skill_index_build_ms         the first search after an approval: the tenant's skill
                               index rebuilt (the skills' hashes checked and embedded)
  resident_ms                  tools.skill_shelf.resident: the [CURRENT_STATE] list, read
                               once per run

Usage: python bench/skill_shelf.py [--calls N] [--skills N] [--archive-kb MIN-MAX] [--json] [--database-url URL]
Without DATABASE_URL (or --database-url) it uses a throwaway SQLite file. With
--archive-kb each skill also holds an asset of random (incompressible) bytes, the
skills' archives spread evenly from MIN to MAX KB (a skill with a PDF or a data file);
without it each archive is a few hundred bytes.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import time

import _django

QUERY = "which region sells the most units"
# Each timed search asks something new: the embedder keeps recent query vectors, and a
# repeated query would time a dictionary look-up instead of a search.
PLACES = ("region", "store", "city", "country", "branch", "team", "channel", "shop", "market", "warehouse")
GOODS = ("units", "books", "bikes", "phones", "shoes", "tickets", "lamps", "chairs", "cars", "plans")
FRESH = itertools.cycle(f"which {place} sells the most {goods}" for place in PLACES for goods in GOODS)
TENANTS = ("bench-skills", "bench-none")


def median_ms(fn, calls: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def asset_sizes(count: int, archive_kb: str | None) -> list[int]:
    """Each skill's asset in bytes: none without ``archive_kb``, else spread from MIN to MAX KB."""
    if not archive_kb:
        return [0] * count
    low, high = (int(kb) * 1024 for kb in archive_kb.split("-"))
    return [low + (high - low) * n // max(1, count - 1) for n in range(count)]


def make_skills(count: int, archive_kb: str | None = None, tenant: str = TENANTS[0]) -> None:
    """``count`` approved skills of ``tenant`` (bench/turn_start.py's too)."""
    from django.contrib.auth import get_user_model

    from registry.models import TenantMembership
    from tools import capability_actions as actions
    from tools.lib.skill_format import MANIFEST, SkillFolder

    reviewer = get_user_model().objects.create_user("bench-skill-reviewer", is_staff=True, is_superuser=True)
    TenantMembership.objects.create(user=reviewer, tenant_id=tenant)
    topics = ["units sold per region", "invoices overdue", "churn by cohort", "weekly stand-up notes"]
    noise = random.Random(0)
    for n, size in enumerate(asset_sizes(count, archive_kb)):
        topic = topics[n % len(topics)]
        manifest = f"---\nname: skill-{n}\ndescription: Summarise {topic}, variant {n}.\n---\nSteps for {topic}.\n"
        files = {MANIFEST: manifest.encode(), "scripts/run.py": f"result = {n}\n".encode()}
        if size:
            files["assets/data.bin"] = noise.randbytes(size)
        folder = SkillFolder(files)
        skill = actions.create_skill(tenant_id=tenant, folder=folder, actor="bench")
        actions.approve(skill, acting_user=reviewer)


def measure(calls: int, skills: int, archive_kb: str | None = None) -> dict:
    from registry.context import ToolContext
    from registry.registry import get_registry
    from tools import skill_shelf

    registry = get_registry()

    def search(tenant: str, query: str = QUERY):
        result = registry.execute_tool("search_tools", {"query": query}, ToolContext(tenant_id=tenant))
        assert result.error is None, result.content
        return result

    make_skills(skills, archive_kb)
    assert "Skills of this team" not in search(TENANTS[1]).content
    assert "Skills of this team" in search(TENANTS[0]).content
    results = {
        "search_tools_no_skills_ms": median_ms(lambda: search(TENANTS[1], next(FRESH)), calls),
        "search_tools_skills_ms": median_ms(lambda: search(TENANTS[0], next(FRESH)), calls),
    }

    def rebuild():
        skill_shelf.clear_cache()
        skill_shelf.find(TENANTS[0], next(FRESH), 3)

    results["skill_index_build_ms"] = median_ms(rebuild, max(3, calls // 10))
    results["resident_ms"] = median_ms(lambda: skill_shelf.resident(TENANTS[0], 10), calls)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--skills", type=int, default=20)
    parser.add_argument("--archive-kb", help="MIN-MAX: the skills' archives spread over this size in KB")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    database = _django.setup(args.database_url)

    from django.contrib.auth import get_user_model

    from registry.models import ToolExecutionLog
    from tools.models import CapabilityReview, Skill

    try:
        results = measure(args.calls, args.skills, args.archive_kb)
    finally:
        CapabilityReview.objects.filter(tenant_id__in=TENANTS).delete()
        Skill.objects.filter(tenant_id__in=TENANTS).delete()
        ToolExecutionLog.objects.filter(tenant_id__in=TENANTS).delete()
        get_user_model().objects.filter(username="bench-skill-reviewer").delete()
    _django.print_results(
        {
            "calls": args.calls,
            "skills": args.skills,
            "archive_kb": args.archive_kb or "tiny",
            "database": database,
            **results,
        },
        args.json,
    )


if __name__ == "__main__":
    main()
