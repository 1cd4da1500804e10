"""Periodic background work, registered with django-q2 by ``seed_tools`` (each deploy).

The registry's own jobs are listed here; an app above it adds its jobs with
``register`` when it loads (``AppConfig.ready``), so this module names nothing
above the registry.
"""

from __future__ import annotations

from typing import NamedTuple


class Job(NamedTuple):
    name: str
    func: str  # dotted path of the function django-q2 calls
    minutes: int  # between runs


_jobs: dict[str, Job] = {}


def register(name: str, func: str, minutes: int) -> None:
    """Run ``func`` every ``minutes`` (an app's own job; registering a name again replaces it)."""
    _jobs[name] = Job(name, func, minutes)


register("derive tool floor", "registry.surface_floor.derive_and_store_tier0", 60)


def jobs() -> list[Job]:
    return list(_jobs.values())


def ensure_schedules() -> int:
    """Create or update each job's schedule; returns how many there are."""
    from django_q.models import Schedule

    for job in _jobs.values():
        Schedule.objects.update_or_create(
            name=job.name, defaults={"func": job.func, "schedule_type": Schedule.MINUTES, "minutes": job.minutes}
        )
    return len(_jobs)
