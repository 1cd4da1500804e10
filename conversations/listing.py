"""A person's list of conversations: titles, last activity, rename, delete and its undo.

The REST API (conversations/api.py) and the chat page call these; who may act
on which conversation is decided before (conversations/access.py): a user only
ever reaches their own.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from conversations.models import Conversation
from eunice.db.prepared import PreparedUpdate

TITLE_CHARS = 60  # a title made from a first message; a rename may use the field's 200
SEARCH_CHARS = 200  # the longest search the list accepts


def title_from(text: str) -> str:
    """A title for a conversation from its first message: the first line, spaces folded, cut short."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    words = re.sub(r"\s+", " ", first).strip()
    return words if len(words) <= TITLE_CHARS else words[: TITLE_CHARS - 1].rstrip() + "…"


_MARK_ACTIVE = PreparedUpdate(
    lambda pk, now, title: (
        Conversation.objects.filter(pk=pk),
        {
            "updated_at": now,
            "title": models.Case(models.When(title="", then=models.Value(title)), default=models.F("title")),
        },
    )
)


def mark_active(conversation: Conversation, message: str) -> None:
    """A message was sent: the conversation moves to the top of the list, and one still
    untitled is named after this (its first) message. One UPDATE, composed once (every
    turn makes it before its first chunk)."""
    now = timezone.now()
    title = title_from(message)
    _MARK_ACTIVE(conversation.pk, now, title)
    conversation.updated_at = now
    conversation.title = conversation.title or title


@transaction.atomic
def rename(conversation: Conversation, title: str, *, acting_user: Any) -> Conversation:
    """Gives ``conversation`` the title ``title`` (already validated: non-blank, ≤ 200)."""
    conversation.title = title
    conversation.save(update_fields=["title", "updated_at"])
    return conversation


@transaction.atomic
def delete(conversation: Conversation, *, acting_user: Any) -> None:
    """Deletes ``conversation`` for its owner: gone from every list and lookup, until restored."""
    Conversation.objects.filter(pk=conversation.pk).update(deleted_at=timezone.now())


@transaction.atomic
def restore(conversation: Conversation, *, acting_user: Any) -> Conversation:
    """Undoes ``delete``: the conversation is back, with everything in it."""
    conversation.deleted_at = None
    conversation.save(update_fields=["deleted_at"])
    return conversation
