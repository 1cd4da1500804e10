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
    keep_results: bool  # a row in django-q2's successes for each run that went well


_jobs: dict[str, Job] = {}


def register(name: str, func: str, minutes: int, *, keep_results: bool = True) -> None:
    """Run ``func`` every ``minutes`` (an app's own job; registering a name again replaces
    it). A frequent job passes ``keep_results=False``: django-q2 keeps only the last
    ``save_limit`` successes, and a row a minute would push every other job's out."""
    _jobs[name] = Job(name, func, minutes, keep_results)


register("derive tool floor", "registry.surface_floor.derive_and_store_tier0", 60)


def ensure_schedules() -> int:
    """Create or update each job's schedule; returns how many there are."""
    from django_q.models import Schedule

    for job in _jobs.values():
        Schedule.objects.update_or_create(
            name=job.name,
            defaults={
                "func": job.func,
                "schedule_type": Schedule.MINUTES,
                "minutes": job.minutes,
                # django-q2 reads a schedule's kwargs as a call's, and takes q_options for itself.
                "kwargs": "" if job.keep_results else "q_options={'save': False}",
            },
        )
    return len(_jobs)
