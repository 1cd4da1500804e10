"""Conversations and the per-conversation state tools keep."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


def _conversation_id() -> str:
    return uuid.uuid4().hex


class ConversationQuerySet(models.QuerySet):
    def for_tenant(self, tenant_id: str) -> "ConversationQuerySet":
        return self.filter(tenant_id=tenant_id)


class Conversation(models.Model):
    class Mode(models.TextChoices):
        CHAT = "chat", "Chat"
        AGENTIC = "agentic", "Agentic"
        DELEGATE = "delegate", "Delegate"

    id = models.CharField(primary_key=True, max_length=64, default=_conversation_id)
    tenant_id = models.CharField(max_length=64, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    title = models.CharField(max_length=200, blank=True)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.CHAT)
    namespace_id = models.CharField(max_length=64, blank=True)
    plan = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ConversationQuerySet.as_manager()

    class Meta:
        db_table = "conversations"
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title or self.id


class WorkingSetEntryQuerySet(models.QuerySet):
    def for_scope(self, conversation_id: str, namespace_id: str = "") -> "WorkingSetEntryQuerySet":
        return self.filter(conversation_id=conversation_id, namespace_id=namespace_id)


class WorkingSetEntry(models.Model):
    """A tool paged in by search_tools; it stays resident for the conversation."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="working_set"
    )
    namespace_id = models.CharField(max_length=64, blank=True, default="")
    tool_name = models.CharField(max_length=64)
    query = models.CharField(max_length=500, blank=True, help_text="The search that paged it in.")
    added_at = models.DateTimeField(auto_now_add=True)

    objects = WorkingSetEntryQuerySet.as_manager()

    class Meta:
        db_table = "conversation_working_set"
        ordering = ["added_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "namespace_id", "tool_name"], name="working_set_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} in {self.conversation_id}"
