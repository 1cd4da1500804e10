"""The conversations, as the data catalog and the tools read them: a port the
``conversations`` app installs.

The layers below ``conversations`` (``datacatalog``, ``tools``) must not import it;
``conversations.apps`` installs its records here when Django starts.
"""

from __future__ import annotations

from registry.installed import Port
from registry.ports import ConversationRecords

_records: Port[ConversationRecords] = Port("conversation records", "conversations")
install = _records.install


def conversation_records() -> ConversationRecords:
    """The installed records. Raises ImproperlyConfigured before the conversations app is ready."""
    return _records.get()
