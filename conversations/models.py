"""Conversations and the per-conversation state tools keep."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


def _conversation_id() -> str:
    return uuid.uuid4().hex


class ConversationQuerySet(models.QuerySet):
    def for_tenant(self, tenant_id: str) -> ConversationQuerySet:
        return self.filter(tenant_id=tenant_id)

    def live(self) -> ConversationQuerySet:
        """Not deleted (a deleted one can still be restored: conversations/listing.py)."""
        return self.filter(deleted_at__isnull=True)

    def by_activity(self) -> ConversationQuerySet:
        """The most recently active first: a message sent moves a conversation to the top."""
        return self.order_by("-updated_at", "-created_at")

    def search(self, words: str) -> ConversationQuerySet:
        """Those whose title or any message contains ``words`` (case-insensitive)."""
        said = ChatMessage.objects.filter(conversation=models.OuterRef("pk"), text__icontains=words)
        return self.filter(models.Q(title__icontains=words) | models.Exists(said))


class Conversation(models.Model):
    class Mode(models.TextChoices):
        CHAT = "chat", "Chat"
        AGENTIC = "agentic", "Agentic"
        DELEGATE = "delegate", "Delegate"

    id = models.CharField(primary_key=True, max_length=64, default=_conversation_id)
    tenant_id = models.CharField(max_length=64, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    title = models.CharField(max_length=200, blank=True)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.CHAT)
    namespace_id = models.CharField(max_length=64, blank=True)
    plan = models.JSONField(default=dict, blank=True)
    # Tool calls that failed, with how often: [{tool, args_hash, reason, attempts}].
    failed_approaches = models.JSONField(default=list, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    context_calibration = models.JSONField(
        default=dict, blank=True, help_text="Characters per token the provider counted, by model."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The last activity (a message sent, a rename): conversations/listing.py moves it.
    updated_at = models.DateTimeField(auto_now=True)
    # Deleted by its owner, who may still undo it (restore); gone from every list and lookup.
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = ConversationQuerySet.as_manager()

    class Meta:
        db_table = "conversations"
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title or self.id


class WorkingSetEntryQuerySet(models.QuerySet):
    def for_scope(self, conversation_id: str, namespace_id: str = "") -> WorkingSetEntryQuerySet:
        return self.filter(conversation_id=conversation_id, namespace_id=namespace_id)


class WorkingSetEntry(models.Model):
    """A tool paged in by search_tools; it stays until evicted as the least recently used."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="working_set")
    namespace_id = models.CharField(max_length=64, blank=True, default="")
    tool_name = models.CharField(max_length=64)
    query = models.CharField(max_length=500, blank=True, help_text="The search that paged it in.")
    added_at = models.DateTimeField(auto_now_add=True)
    used_at = models.DateTimeField(
        default=timezone.now, help_text="Paged in, found again or called last; the least recent is evicted first."
    )

    objects = WorkingSetEntryQuerySet.as_manager()

    class Meta:
        db_table = "conversation_working_set"
        ordering = ["used_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "namespace_id", "tool_name"], name="working_set_once")
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} in {self.conversation_id}"


class ChatMessage(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    message_id = models.CharField(max_length=64, unique=True)
    tenant_id = models.CharField(max_length=64, db_index=True)
    role = models.CharField(max_length=16, choices=Role.choices)
    text = models.TextField(blank=True)
    structured_content = models.JSONField(default=list, blank=True)
    cards = models.JSONField(default=list, blank=True)
    cost_usd = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "chat_messages"
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.text[:60]}"


class EventType(models.TextChoices):
    USER_MESSAGE = "user_message"
    LLM_REQUEST = "llm_request"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    THINKING = "thinking"
    STATUS = "status"
    TEXT_DELTA = "text_delta"
    CARD = "card"
    PROGRESS = "progress"
    ERROR = "error"
    POLICY_VIOLATION = "policy_violation"
    BEHAVIORAL_OBSERVATION = "behavioral_observation"
    DECISION = "decision"
    OUTCOME = "outcome"
    CORRECTION = "correction"
    FRICTION = "friction"
    EXPORT = "export"
    DONE = "done"
    TEXT_POSITION_STATS = "text_position_stats"
    CONTRACT_ENVELOPE = "contract_envelope"
    INTERRUPTED = "interrupted"
    # A delegated task's: its start and end, its text and thinking (never the answer's).
    SUBTASK_STARTED = "subtask_started"
    SUBTASK_TEXT = "subtask_text"
    SUBTASK_THINKING = "subtask_thinking"
    SUBTASK_FINISHED = "subtask_finished"


class ConversationEventBlob(models.Model):
    """The payload of an event too large to keep inline (over 32 KB)."""

    data = models.BinaryField()
    size_bytes = models.PositiveIntegerField()

    class Meta:
        db_table = "conversation_event_blobs"


class ConversationEvent(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="events")
    turn = models.PositiveIntegerField()
    sequence = models.PositiveIntegerField()
    event_type = models.CharField(max_length=32, choices=EventType.choices, db_index=True)
    data = models.JSONField(default=dict, blank=True)
    blob = models.OneToOneField(
        ConversationEventBlob, null=True, blank=True, on_delete=models.SET_NULL, related_name="event"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "conversation_events"
        ordering = ["turn", "sequence"]
        constraints = [models.UniqueConstraint(fields=["conversation", "turn", "sequence"], name="event_order_unique")]

    def __str__(self) -> str:
        return f"{self.event_type} #{self.turn}.{self.sequence}"


class TurnRecord(models.Model):
    """One turn: reserved (``running``) when it begins, closed ``finished`` or ``interrupted``.

    A closed turn holds every effect it produced, in order: enough to replay it
    exactly. At most one turn of a conversation runs at a time (``one_running_turn``),
    and a number is taken once (``turn_once``): two messages at once cannot both
    start a turn, whichever process they reach (conversations/turn_reservations.py).
    """

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        INTERRUPTED = "interrupted", "Interrupted"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    turn = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.FINISHED)
    # The server process running the turn ("host:pid:token") and when it last said it still is.
    owner = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    interrupted_reason = models.CharField(max_length=300, blank=True)
    effects = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "conversation_turns"
        ordering = ["turn"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "turn"], name="turn_once"),
            models.UniqueConstraint(
                fields=["conversation"], condition=models.Q(status="running"), name="one_running_turn"
            ),
        ]

    def __str__(self) -> str:
        return f"turn {self.turn} of {self.conversation_id} ({self.status})"


class Notification(models.Model):
    tenant_id = models.CharField(max_length=64, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE)
    kind = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "notifications"
        ordering = ["-created_at"]


class UsageLogQuerySet(models.QuerySet):
    def matching(
        self, *, tool: str = "", tenant: str = "", user: str = "", success: bool | None = None
    ) -> UsageLogQuerySet:
        """The rows the telemetry page's filters keep ("" and None filter nothing). A
        model's request belongs to no tool and has no success of its own, so a ``tool``
        or ``success`` filter keeps tool calls only (rows written before calls recorded
        their success have none, and are left out too)."""
        rows = self
        if tool:
            rows = rows.filter(kind=UsageLog.Kind.TOOL, name=tool)
        if success is not None:
            rows = rows.filter(kind=UsageLog.Kind.TOOL, success=success)
        if tenant:
            rows = rows.filter(tenant_id=tenant)
        if user:
            rows = rows.filter(user_id=user)
        return rows

    def cost_by(self, field: str, limit: int = 20) -> list[dict]:
        """``field``'s values with the summed ``cost`` and the number of ``calls``, the
        costliest first, at most ``limit``: one grouped query."""
        grouped = self.order_by().values(field).annotate(cost=models.Sum("cost_usd"), calls=models.Count("id"))
        return list(grouped.order_by("-cost", field)[:limit])


class UsageLog(models.Model):
    class Kind(models.TextChoices):
        LLM = "llm", "LLM request"
        TOOL = "tool", "Tool call"

    tenant_id = models.CharField(max_length=64, db_index=True)
    user_id = models.CharField(max_length=64, blank=True)
    conversation = models.ForeignKey(Conversation, null=True, on_delete=models.SET_NULL)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    name = models.CharField(max_length=128, help_text="Tool name or model.")
    cost_usd = models.FloatField(default=0.0)
    input_tokens = models.PositiveIntegerField(default=0, help_text="All input, cached reads and writes included.")
    cache_read_tokens = models.PositiveIntegerField(default=0, help_text="Input read from the prompt cache.")
    cache_write_tokens = models.PositiveIntegerField(default=0, help_text="Input written to the prompt cache.")
    output_tokens = models.PositiveIntegerField(default=0)
    success = models.BooleanField(
        null=True, help_text="A tool call's: whether it succeeded (a Hint counts). Null for a model request."
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = UsageLogQuerySet.as_manager()

    class Meta:
        db_table = "usage_log"
        ordering = ["-created_at"]


class PolicyRuleQuerySet(models.QuerySet):
    def active_for(self, tenant_id: str, tool_name: str) -> PolicyRuleQuerySet:
        return self.filter(enabled=True, tenant_id__in=(tenant_id, "*"), tool_name=tool_name)


class PolicyRule(models.Model):
    """A rule checked before a tool runs. See conversations/policies.py for the kinds."""

    class Kind(models.TextChoices):
        REQUIRES_PRIOR_TOOL = "requires_prior_tool", "Requires another tool to have run first"
        REQUIRES_CAPABILITY = "requires_capability", "Requires a capability"
        MAX_CALLS = "max_calls_per_conversation", "At most N calls per conversation"

    class Action(models.TextChoices):
        WARN = "warn", "Warn (the call runs)"
        BLOCK = "block", "Block (the call is refused)"

    name = models.CharField(max_length=100)
    tenant_id = models.CharField(max_length=64, default="*", db_index=True)
    tool_name = models.CharField(max_length=64, db_index=True)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    parameter = models.CharField(
        max_length=100, help_text="The prior tool, the capability, or the maximum number of calls."
    )
    action = models.CharField(max_length=8, choices=Action.choices, default=Action.WARN)
    message = models.CharField(max_length=300, blank=True, help_text="Why the rule exists (shown to the model).")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PolicyRuleQuerySet.as_manager()

    class Meta:
        db_table = "policy_rules"
        ordering = ["tool_name", "name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        if self.kind == self.Kind.MAX_CALLS and not self.parameter.isdigit():
            raise ValidationError({"parameter": f"a call limit must be a whole number, e.g. 5; got {self.parameter!r}"})


class ObservationQuerySet(models.QuerySet):
    def of_person(self, tenant_id: str, user_id: str) -> ObservationQuerySet:
        """The person's own rows in the tenant, the most reinforced first, then the newest."""
        return self.filter(tenant_id=tenant_id, user_id=user_id).order_by("-count", "-updated_at")


class Observation(models.Model):
    """Something noticed about how one person works, counted each time it recurs: a policy
    they broke (``policy_violation``, keyed by the rule) or what the model noted with
    create_observation (``key`` is the note, normalised, so the same note reinforces its row)."""

    tenant_id = models.CharField(max_length=64, db_index=True)
    user_id = models.CharField(max_length=64, blank=True)
    kind = models.CharField(max_length=64)
    key = models.CharField(max_length=200)
    text = models.TextField(blank=True, help_text="The note as it was last written (create_observation).")
    count = models.PositiveIntegerField(default=0)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ObservationQuerySet.as_manager()

    class Meta:
        db_table = "observations"
        constraints = [models.UniqueConstraint(fields=["tenant_id", "user_id", "kind", "key"], name="observation_once")]


class PolicyViolationTally(models.Model):
    """How often a conversation has broken one policy rule: the escalation's count."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    rule = models.ForeignKey(PolicyRule, on_delete=models.CASCADE, related_name="+")
    count = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "conversation_policy_violations"
        constraints = [models.UniqueConstraint(fields=["conversation", "rule"], name="violation_tally_once")]
