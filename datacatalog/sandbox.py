"""The datasets a custom tool's run may read: the conversation's, for its owner (or staff).

Installed as the sandbox's ``DatasetSource`` when Django starts (conversations.apps).
The same rule as the REST catalog and downloads: the conversation must be the
context's tenant's, and the caller its owner — or a staff member, or anyone of
the tenant for a conversation nobody owns (one made by ``call_tool --conversation``).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import Q

from datacatalog.access import caller_is, is_staff
from datacatalog.models import CatalogDataset
from registry.context import ToolContext
from registry.sandbox.datasets import StoredDataset

if TYPE_CHECKING:  # pandas (the store, the reader) loads at the first run, not at start-up
    import pandas as pd

_BYTES_PER_CELL = 8  # a lower bound of a loaded cell, to refuse a huge dataset before reading it


class CatalogDatasets:
    """``registry.sandbox.datasets.DatasetSource`` over the conversation catalog."""

    def readable(self, context: ToolContext) -> tuple[str | None, list[StoredDataset]]:
        from datacatalog.store import ConversationCatalog

        tenant_id = str(context.tenant_id or "")
        found = context.catalog
        conversation_id = found.conversation_id if isinstance(found, ConversationCatalog) else context.conversation_id
        if not tenant_id or not conversation_id:
            return None, []
        # One query on the common path: the owner's (or nobody's) conversation's rows. The
        # conversation's tenant is the context's: in_conversation filters on both.
        rows = CatalogDataset.objects.in_conversation(tenant_id, str(conversation_id)).order_by("-updated_at", "-id")
        fields = ("name", "path", "rows", "columns", "size_bytes")
        readable = list(
            rows.filter(Q(conversation__user__isnull=True) | caller_is(context, "conversation__user__")).values_list(
                *fields
            )
        )
        if not readable and is_staff(context):
            readable = list(rows.values_list(*fields))
        return (readable[0][0] if readable else None), [_stored(*row) for row in readable]


def _stored(name: str, path: str, rows: int, columns: list, size_bytes: int) -> StoredDataset:
    least = max(size_bytes, rows * max(1, len(columns or ())) * _BYTES_PER_CELL)
    return StoredDataset(name=name, least_bytes=least, load=lambda: _frames.load(path))


class _RecentFrames:
    """The frames of recently read Parquet files, keyed by path, size and mtime (a save
    rewrites the file, so a changed dataset is a new key), least recently used out first
    past twice the per-run budget. Reading the file was most of a warm call's own time;
    the frames are only ever pickled into runs, never changed here."""

    def __init__(self) -> None:
        self._frames: OrderedDict[tuple, tuple[pd.DataFrame, int]] = OrderedDict()
        self._lock = threading.Lock()

    def load(self, path: str) -> tuple[pd.DataFrame, int]:
        """The frame stored at ``path`` and its size in memory."""
        stat = os.stat(path)
        key = (path, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            if key in self._frames:
                self._frames.move_to_end(key)
                return self._frames[key]
        from eunice.bounded_read import read_parquet_file

        frame = read_parquet_file(path)  # the catalog stored it within the limits; checked again all the same
        loaded = (frame, int(frame.memory_usage(index=True, deep=True).sum()))
        with self._lock:
            self._frames[key] = loaded
            limit = 2 * (int(settings.SANDBOX["DATASET_MB"]) << 20)
            while len(self._frames) > 1 and sum(size for _, size in self._frames.values()) > limit:
                self._frames.popitem(last=False)
        return loaded


_frames = _RecentFrames()
