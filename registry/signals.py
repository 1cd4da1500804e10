"""Keep the registry's in-memory definitions in step with the table, in every process.

A change made here reloads this process's copy at once and, once it commits,
every other server process's through the process bus (eunice/bus.py), instead
of waiting for their fingerprint poll (registry/snapshot.py). An MCP server's
``list_changed`` seen here makes every other process re-list that server on its
own session.
"""

import logging

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django_q.signals import post_spawn

from eunice import bus
from registry.models import ToolDefinition

logger = logging.getLogger("eunice.background")

DEFINITIONS_CHANGED = "registry.definitions_changed"
MCP_TOOLS_CHANGED = "registry.mcp_tools_changed"


def definitions_changed(*, here: bool = True) -> None:
    """The definitions table changed: reload here now (unless ``here`` is False: the
    caller has), and in the other processes once it commits."""
    if here:
        _reload()
    bus.publish_on_commit(DEFINITIONS_CHANGED)  # once per transaction, not per row (seeding saves hundreds)


def mcp_tools_changed(server_id: int) -> None:
    """The MCP server told this process its tool list changed: the others re-list it too."""
    bus.publish(MCP_TOOLS_CHANGED, here=False, server=server_id)


@receiver([post_save, post_delete], sender=ToolDefinition)
def _definitions_changed(**_: object) -> None:
    definitions_changed()


@bus.on(DEFINITIONS_CHANGED)
def _changed_elsewhere(_payload: dict) -> None:
    _reload()


@bus.on(MCP_TOOLS_CHANGED)
def _relist_elsewhere(payload: dict) -> None:
    from registry.mcp.manager import get_manager

    if isinstance(payload.get("server"), int):
        get_manager().relist(payload["server"])


@bus.on_reconnect
def _reload() -> None:
    """Also run when the bus (re)subscribes: a change may have been missed meanwhile."""
    from registry.registry import get_registry

    get_registry().invalidate()


@receiver(post_spawn)
def _reap_when_a_worker_starts(**_: object) -> None:
    """A django-q2 worker starting (the cluster starting, or a dead worker replaced): jobs its
    predecessors left running are queued again or failed (registry/background.py)."""
    from registry.background import reap_lost_runs
    from registry.tool_jobs import reap_stranded_builds

    bus.start()  # a job's tools see definition changes pushed, as the server processes do
    try:
        reap_lost_runs()
        reap_stranded_builds()
    except Exception:  # a worker must start even when the sweep cannot run (the database is down)
        logger.exception("could not reap lost jobs")
