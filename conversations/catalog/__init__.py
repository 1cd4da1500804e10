"""The conversation catalog: datasets scoped to a conversation, uploads, exports, datasources.

The API tools use: ``ConversationCatalog.for_context(context)`` then
``load(name)``, ``default_dataset()``, ``save(name, frame, source=…)``;
``register_export(...)`` for files a tool writes.
"""

from conversations.catalog.files import file_card, register_export
from conversations.catalog.store import (
    CatalogError,
    ConversationCatalog,
    NoConversation,
    UnknownDataset,
)

__all__ = [
    "CatalogError",
    "ConversationCatalog",
    "NoConversation",
    "UnknownDataset",
    "file_card",
    "register_export",
]
