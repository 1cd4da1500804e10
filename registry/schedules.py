"""Periodic background work, registered with django-q2 on start-up."""

from __future__ import annotations

SCHEDULES = (
    # (name, function, schedule type, minutes between runs)
    ("derive tool floor", "registry.surface_floor.derive_and_store_tier0", "I", 60),
)


def ensure_schedules() -> int:
    """Create or update each schedule; returns how many exist."""
    from django_q.models import Schedule

    for name, func, schedule_type, minutes in SCHEDULES:
        Schedule.objects.update_or_create(
            name=name, defaults={"func": func, "schedule_type": schedule_type, "minutes": minutes}
        )
    return len(SCHEDULES)
