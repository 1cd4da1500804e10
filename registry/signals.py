"""Keep the registry's in-memory definitions in step with the table."""

import logging

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django_q.signals import post_spawn

from registry.models import ToolDefinition

logger = logging.getLogger("eunice.background")


@receiver([post_save, post_delete], sender=ToolDefinition)
def _definitions_changed(**_: object) -> None:
    from registry.registry import get_registry

    get_registry().invalidate()


@receiver(post_spawn)
def _reap_when_a_worker_starts(**_: object) -> None:
    """A django-q2 worker starting (the cluster starting, or a dead worker replaced): jobs its
    predecessors left running are queued again or failed (registry/background.py)."""
    from registry.background import reap_lost_runs
    from registry.tool_jobs import reap_stranded_builds

    try:
        reap_lost_runs()
        reap_stranded_builds()
    except Exception:  # a worker must start even when the sweep cannot run (the database is down)
        logger.exception("could not reap lost jobs")
