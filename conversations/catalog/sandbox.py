"""The datasets a custom tool's run may read: the conversation's, for its owner (or staff).

Installed as the sandbox's ``DatasetSource`` when Django starts (conversations.apps).
The same rule as the REST catalog and downloads: the conversation must be the
context's tenant's, and the caller its owner — or a staff member, or anyone of
the tenant for a conversation nobody owns (one made by ``call_tool --conversation``).
"""

from __future__ import annotations

import pandas as pd
from django.db.models import Q

from conversations.catalog.access import caller_is, is_staff
from conversations.catalog.store import ConversationCatalog
from conversations.models import CatalogDataset, Conversation
from registry.sandbox.datasets import StoredDataset

_BYTES_PER_CELL = 8  # a lower bound of a loaded cell, to refuse a huge dataset before reading it


class CatalogDatasets:
    """``registry.sandbox.datasets.DatasetSource`` over the conversation catalog."""

    def readable(self, context: dict) -> tuple[str | None, list[StoredDataset]]:
        tenant_id = str(context.get("tenant_id") or "")
        found = context.get("catalog")
        conversation_id = found.conversation_id if isinstance(found, ConversationCatalog) else context.get("conversation_id")
        if not tenant_id or not conversation_id or not self._may_read(context, tenant_id, str(conversation_id)):
            return None, []
        rows = list(
            CatalogDataset.objects.in_conversation(tenant_id, str(conversation_id))
            .order_by("-updated_at", "-id").only("name", "path", "rows", "columns", "size_bytes")
        )
        return (rows[0].name if rows else None), [_stored(row) for row in rows]

    @staticmethod
    def _may_read(context: dict, tenant_id: str, conversation_id: str) -> bool:
        conversations = Conversation.objects.for_tenant(tenant_id).filter(pk=conversation_id)
        if conversations.filter(Q(user__isnull=True) | caller_is(context, "user__")).exists():
            return True
        return conversations.exists() and is_staff(context)


def _stored(row: CatalogDataset) -> StoredDataset:
    least = max(row.size_bytes, row.rows * max(1, len(row.columns or ())) * _BYTES_PER_CELL)
    return StoredDataset(name=row.name, least_bytes=least, load=lambda path=row.path: pd.read_parquet(path))
