"""The query plan of every reader of the execution log, on the configured database.

Fills the log with --rows rows (40 tools, 5 tenants, 500 conversations, 30 days),
has the database gather its statistics (ANALYZE; VACUUM ANALYZE on PostgreSQL), and prints each query's plan
(``QuerySet.explain()``: EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL). The
querysets are those of the code named beside each; a change to the log's indexes
should leave every one of them on an index.

Usage: python bench/log_query_plans.py [--rows N] [--database-url URL]
Without DATABASE_URL (or --database-url) it uses a throwaway SQLite file.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

import _django

TENANT = "plans-0"


def fill(rows: int) -> None:
    from django.db import connection
    from django.utils import timezone

    from registry.models import ToolExecutionLog

    now = timezone.now()
    made = [
        ToolExecutionLog(
            tool_name=f"tool_{n % 40}",
            tenant_id=f"plans-{n % 5}",
            user_id=str(n % 50),
            conversation_id=f"conv-{n % 500}",
            input_data={"n": n},
            output_summary="ok",
            success=n % 7 != 0,
            outcome="ok" if n % 7 else "err",
            execution_ms=1.0,
            created_at=now - timedelta(seconds=n * 30 * 86400 // rows),
        )
        for n in range(rows)
    ]
    ToolExecutionLog.objects.bulk_create(made, batch_size=2000)
    with connection.cursor() as cursor:  # (VACUUM: the rows an earlier run deleted leave no dead pages to cost)
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")


def queries() -> dict[str, object]:
    from django.db.models import Count, Q
    from django.utils import timezone

    from conversations.state import _calls_by_outcome
    from registry.models import ToolExecutionLog

    log = ToolExecutionLog.objects
    week = timezone.now() - timedelta(days=7)
    return {
        # conversations/state.py: every turn's tallies of its conversation's calls
        "state: a conversation's calls by outcome": _calls_by_outcome("conv-7"),
        # conversations/staff_views.telemetry, a staff member's page (their tenant), and filtered by tool
        "staff page: tenant, week, newest 50": log.filter(tenant_id=TENANT, created_at__gte=week).order_by(
            "-created_at"
        )[:50],
        "staff page: tenant, tool, week, newest 50": log.filter(
            tenant_id=TENANT, tool_name="tool_3", created_at__gte=week
        ).order_by("-created_at")[:50],
        "staff page (superuser): tool, week, newest 50": log.filter(tool_name="tool_3", created_at__gte=week).order_by(
            "-created_at"
        )[:50],
        "staff page: per-tool durations": log.filter(tenant_id=TENANT, created_at__gte=week)
        .order_by("-created_at")
        .values_list("tool_name", "execution_ms")[:50_000],
        "staff page / tool_stats: envelope tallies": log.filter(tenant_id=TENANT, created_at__gte=week)
        .order_by()
        .values("tool_name", "outcome", "outcome_kind", "success")
        .annotate(n=Count("id")),
        # registry/surface_floor.compute_scores
        "surface floor: calls by tool and age": log.order_by()
        .values("tool_name")
        .annotate(recent=Count("id", filter=Q(created_at__gte=week))),
        # registry/staff_views: the playground's last row of a tool by a user
        "playground: a tool's last row by a user": log.filter(tool_name="tool_3", user_id="3").order_by("-created_at")[
            :1
        ],
        # tools/telemetry._calls (load_telemetry, query_telemetry)
        "load_telemetry: a conversation's calls": log.filter(tenant_id=TENANT, conversation_id="conv-5").order_by(
            "-created_at"
        )[:5000],
        "load_telemetry: a tool's calls in the tenant": log.filter(tenant_id=TENANT, tool_name="tool_3").order_by(
            "-created_at"
        )[:5000],
        # registry/admin.ToolExecutionLogAdmin: its list, a filter by tool, the tool filter's choices
        "admin: newest 100": log.order_by("-created_at")[:100],
        "admin: a tool's newest 100": log.filter(tool_name="tool_3").order_by("-created_at")[:100],
        "admin: the tool filter's choices": log.distinct().order_by("tool_name").values_list("tool_name"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    database = _django.setup(args.database_url, seed=False)

    from django.db import connection

    from registry.models import ToolExecutionLog

    ToolExecutionLog.objects.filter(tenant_id__startswith="plans-").delete()
    try:
        fill(args.rows)
        with connection.cursor() as cursor:
            indexes = sorted(connection.introspection.get_constraints(cursor, "tool_execution_log"))
        print(f"{database}, {args.rows:,} rows; indexes: {', '.join(indexes)}\n")
        for name, queryset in queries().items():
            print(f"{name}\n    " + queryset.explain().replace("\n", "\n    ") + "\n")  # type: ignore[attr-defined]
    finally:
        ToolExecutionLog.objects.filter(tenant_id__startswith="plans-").delete()


if __name__ == "__main__":
    main()
