"""``registry.ports.ConversationRecords`` over the conversation models (installed by
conversations.apps): what the data catalog and the tools read of a conversation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from conversations.access import conversations_of
from conversations.models import ChatMessage, Conversation, ConversationEvent
from conversations.observations import note_observation
from datacatalog.access import caller_is, is_staff
from registry.context import ToolContext
from registry.ports import ConversationChoice, ConversationFacts, LoggedEvent, Message


class StoredConversations:
    def exists(self, tenant_id: str, conversation_id: str) -> bool:
        return Conversation.objects.for_tenant(tenant_id).filter(id=conversation_id).exists()

    def find(self, tenant_id: str, conversation_id: str) -> ConversationFacts | None:
        found = Conversation.objects.for_tenant(tenant_id).filter(id=conversation_id).first()
        return ConversationFacts(found.pk, found.title, dict(found.plan or {})) if found is not None else None

    def readable(self, context: ToolContext, conversation_id: str) -> bool:
        rows = Conversation.objects.for_tenant(context.tenant_id).filter(id=conversation_id)
        if conversation_id != str(context.conversation_id or "") and not is_staff(context):
            rows = rows.filter(caller_is(context))
        return rows.exists()

    def save_plan(self, tenant_id: str, conversation_id: str, plan: dict) -> None:
        rows = Conversation.objects.for_tenant(tenant_id).filter(id=conversation_id)
        rows.update(plan=plan, updated_at=timezone.now())

    def recent_of(self, user: Any, limit: int) -> list[ConversationChoice]:
        rows = conversations_of(user).by_activity()[:limit]
        return [_choice(row) for row in rows.only("id", "title", "tenant_id", "updated_at")]

    def one_of(self, user: Any, conversation_id: str) -> ConversationChoice | None:
        found = conversations_of(user).filter(pk=conversation_id).only("id", "title", "tenant_id", "updated_at")
        return next((_choice(row) for row in found[:1]), None)

    def messages(self, conversation_id: str) -> list[Message]:
        rows = ChatMessage.objects.filter(conversation_id=conversation_id)
        return [Message(role, text) for role, text in rows.values_list("role", "text")]

    def events(
        self,
        conversation_id: str,
        kinds: Sequence[str] = (),
        *,
        newest_first: bool = False,
        limit: int | None = None,
        with_blobs: bool = True,
    ) -> list[LoggedEvent]:
        rows = ConversationEvent.objects.filter(conversation_id=conversation_id)
        if kinds:
            rows = rows.filter(event_type__in=kinds)
        if newest_first:
            rows = rows.order_by("-turn", "-sequence")
        if with_blobs:
            rows = rows.select_related("blob")
        return [_logged(row, with_blobs) for row in (rows[:limit] if limit is not None else rows)]

    def tenant_events(self, tenant_id: str, *, since: datetime | None, limit: int) -> list[LoggedEvent]:
        rows = ConversationEvent.objects.filter(conversation__tenant_id=tenant_id)
        if since is not None:
            rows = rows.filter(created_at__gte=since)
        rows = rows.order_by("-created_at", "-sequence")[:limit]
        return [_logged(row, with_blobs=False) for row in rows]

    def note_observation(self, *, tenant_id: str, user_id: str, kind: str, text: str) -> int:
        return note_observation(tenant_id=tenant_id, user_id=user_id, kind=kind, text=text)


def _choice(row: Conversation) -> ConversationChoice:
    return ConversationChoice(row.pk, row.title, row.tenant_id, row.updated_at)


def _logged(row: ConversationEvent, with_blobs: bool) -> LoggedEvent:
    data = json.loads(bytes(row.blob.data)) if with_blobs and row.blob is not None else row.data
    return LoggedEvent(row.turn, row.sequence, row.event_type, row.created_at, data, row.conversation_id)
