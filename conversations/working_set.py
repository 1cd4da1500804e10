"""The conversation's working set, as ``registry.surface`` reads it (``registry.ports.WorkingSet``)."""

from __future__ import annotations

from django.utils import timezone

from conversations.models import WorkingSetEntry
from eunice.db.prepared import Prepared


class StoredWorkingSets:
    """Working sets in the ``WorkingSetEntry`` table; installed when Django starts (conversations.apps)."""

    def names(self, conversation_id: str, namespace_id: str) -> list[str]:
        rows = WorkingSetEntry.objects.for_scope(conversation_id, namespace_id)
        return list(rows.values_list("tool_name", flat=True))

    def add(self, conversation_id: str, namespace_id: str, names: list[str], query: str) -> None:
        WorkingSetEntry.objects.bulk_create(
            [
                WorkingSetEntry(
                    conversation_id=conversation_id, namespace_id=namespace_id, tool_name=name, query=query[:500]
                )
                for name in names
            ],
            ignore_conflicts=True,
        )

    def touch(self, conversation_id: str, namespace_id: str, names: list[str]) -> None:
        if names:
            rows = WorkingSetEntry.objects.for_scope(conversation_id, namespace_id).filter(tool_name__in=names)
            rows.update(used_at=timezone.now())

    def evict(self, conversation_id: str, namespace_id: str, names: list[str]) -> None:
        if names:
            WorkingSetEntry.objects.for_scope(conversation_id, namespace_id).filter(tool_name__in=names).delete()


def copy_scope(conversation_id: str, source: str, target: str) -> None:
    """Start the working set ``target`` as a copy of ``source`` (a delegated task's own,
    from its delegator's), in the same least-recently-used order."""
    rows = WorkingSetEntry.objects.for_scope(conversation_id, source).order_by("used_at", "id")
    WorkingSetEntry.objects.bulk_create(
        [
            WorkingSetEntry(conversation_id=conversation_id, namespace_id=target, tool_name=name, query=query)
            for name, query in rows.values_list("tool_name", "query")
        ],
        ignore_conflicts=True,
    )


def drop_scope(conversation_id: str, scope: str) -> None:
    """Forget the working set ``scope`` (a delegated task's, once it has ended)."""
    WorkingSetEntry.objects.for_scope(conversation_id, scope).delete()


_PAGED_IN: Prepared[tuple[str, int]] = Prepared(
    lambda conversation_id, namespace_id: WorkingSetEntry.objects.for_scope(conversation_id, namespace_id).values_list(
        "tool_name", "id"
    )
)


def paged_in(conversation_id: str, namespace_id: str) -> tuple[list[str], list[str]]:
    """The paged-in tool names least recently used first (what the surface cuts by),
    and in the order they were paged in (the order the model is shown them). One
    query, composed once (every model call reads it)."""
    pairs = _PAGED_IN(conversation_id, namespace_id)
    return [name for name, _ in pairs], [name for name, _ in sorted(pairs, key=lambda pair: pair[1])]
