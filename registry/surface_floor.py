"""The resident floor: the tools every call offers before anything is paged in.

The floor is derived, not hand-listed: hand-kept ``ANCHORS`` first, then the
tools the execution log shows are used most (recent use weighs more), up to
``TARGET_FLOOR``. The derived list is stored in a pinned SeedLog row and read
back through a short cache; ``STATIC_FLOOR`` stands in until one exists.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone

from registry.models import SeedLog, ToolExecutionLog

logger = logging.getLogger("eunice.registry")

FLOOR_KEY = "tool_surface_tier0_v1"
TARGET_FLOOR = 30
MIN_FLOOR, MAX_FLOOR = 25, 35
FLOOR_CACHE_SECONDS = 30.0

# (newer than N days, weight): a call in the last 30 days counts 3, in the
# last 90 days 1, older ones 0.2 — what was useful lately matters most.
AGE_WEIGHTS = ((30, 3.0), (90, 1.0), (None, 0.2))

# Always resident, whatever the usage says: a raw usage floor can never
# include a capability that has not been used yet.
ANCHORS: tuple[str, ...] = (
    "search_tools",  # the way to every tool that is not resident
    "plan",  # multi-step work needs a plan from the first turn on
)

# Unioned into every floor, never derived out: without them the platform
# cannot find or read data at all. Names not yet in the registry are skipped.
SYSTEM_TOOL_NAMES: tuple[str, ...] = (
    "search_catalog",
    "search_tools",
    "describe_entry",
    "query",
    "query_frames",
    "query_datasource",
    "analyze_data",
    "preview_data",
    "recall_entities",
    "get_entity",
    "present_rows",
)

# The bootstrap floor, used until a derived floor has been stored (or when the
# stored value does not parse).
STATIC_FLOOR: tuple[str, ...] = ANCHORS


def compute_scores(now=None) -> dict[str, float]:
    """Usage score per tool: calls weighted by age bucket, from the execution log."""
    now = now or timezone.now()
    recent = now - timedelta(days=AGE_WEIGHTS[0][0])
    mid = now - timedelta(days=AGE_WEIGHTS[1][0])
    rows = (
        ToolExecutionLog.objects.order_by()
        .values("tool_name")
        .annotate(
            recent=Count("id", filter=Q(created_at__gte=recent)),
            mid=Count("id", filter=Q(created_at__lt=recent, created_at__gte=mid)),
            old=Count("id", filter=Q(created_at__lt=mid)),
        )
    )
    (_, w_recent), (_, w_mid), (_, w_old) = AGE_WEIGHTS
    return {row["tool_name"]: row["recent"] * w_recent + row["mid"] * w_mid + row["old"] * w_old for row in rows}


def derive_tier0(
    scores: dict[str, float],
    *,
    anchors: tuple[str, ...] = ANCHORS,
    known: set[str] | None = None,
    target: int = TARGET_FLOOR,
) -> list[tuple[str, str]]:
    """Anchors first, in order, then the best-scoring other tools up to ``target``.

    Returns ``(name, reason)`` pairs, reason ``anchor`` or ``usage``. Only
    names in ``known`` (when given) can earn a usage slot. Logs a warning, and
    carries on, when the result is outside [MIN_FLOOR, MAX_FLOOR].
    """
    floor = [(name, "anchor") for name in anchors]
    chosen = set(anchors)
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    for name, score in ranked:
        if len(floor) >= target:
            break
        if name in chosen or score <= 0 or (known is not None and name not in known):
            continue
        floor.append((name, "usage"))
        chosen.add(name)
    if not MIN_FLOOR <= len(floor) <= MAX_FLOOR:
        why = ""
        if len(floor) < MIN_FLOOR:
            used = sum(1 for name, score in scores.items() if score > 0 and (known is None or name in known))
            why = (
                f": {used} live tool(s) have calls in the execution log so far; "
                "the floor fills from it as tools are used (a new install starts small)"
            )
        logger.warning("derived tool floor has %d tools, outside [%d, %d]%s", len(floor), MIN_FLOOR, MAX_FLOOR, why)
    return floor


def derive_and_store_tier0() -> list[tuple[str, str]]:
    """Derive the floor from live tools and usage, and pin it in SeedLog."""
    from registry.models import ToolDefinition

    known = set(ToolDefinition.objects.live().values_list("name", flat=True))
    floor = derive_tier0(compute_scores(), known=known)
    SeedLog.objects.update_or_create(
        key=FLOOR_KEY,
        defaults={
            "value": {
                "floor": [{"name": name, "reason": reason} for name, reason in floor],
                "derived_at": timezone.now().isoformat(),
            },
            "pinned": True,
        },
    )
    _cache.clear()
    return floor


class _FloorCache:
    def __init__(self) -> None:
        self._value: list[tuple[str, str]] | None = None
        self._loaded_at = float("-inf")
        self._lock = threading.Lock()

    def get(self) -> list[tuple[str, str]]:
        now = time.monotonic()
        if self._value is None or now - self._loaded_at > FLOOR_CACHE_SECONDS:
            with self._lock:
                self._value = _load_floor()
                self._loaded_at = now
        return self._value

    def clear(self) -> None:
        self._value = None


_cache = _FloorCache()


def resolve_floor_names() -> list[tuple[str, str]]:
    """The resident floor with reasons, SYSTEM_TOOL_NAMES unioned in (cached briefly)."""
    return _cache.get()


def clear_floor_cache() -> None:
    _cache.clear()


def _load_floor() -> list[tuple[str, str]]:
    row = SeedLog.objects.filter(key=FLOOR_KEY).values_list("value", flat=True).first()
    floor = _parse(row)
    if floor is None:
        if row is not None:
            logger.warning("stored tool floor %r does not parse; using the static floor", FLOOR_KEY)
        floor = [(name, "static_fallback") for name in STATIC_FLOOR]
    names = {name for name, _ in floor}
    floor += [(name, "system") for name in SYSTEM_TOOL_NAMES if name not in names]
    return floor


def _parse(value: object) -> list[tuple[str, str]] | None:
    if not isinstance(value, dict) or not isinstance(value.get("floor"), list):
        return None
    floor = []
    for item in value["floor"]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return None
        floor.append((item["name"], str(item.get("reason") or "usage")))
    return floor or None
