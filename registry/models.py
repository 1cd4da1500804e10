"""Tool definitions, build jobs, the execution log and derived configuration."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from registry.fields import OrderedJSONField, SealedJSONField

ALL_TENANTS = "*"


class LenientJSONEncoder(DjangoJSONEncoder):
    """Stores values JSON cannot express (sets, bytes, objects) as their repr.

    The execution log records what a caller passed, whatever it was; refusing
    the row would lose the record of the call.
    """

    def default(self, o: object) -> object:
        try:
            return super().default(o)
        except TypeError:
            return repr(o)


class ToolType(models.TextChoices):
    SYSTEM = "system", "System"
    CUSTOM = "custom", "Custom"
    MCP = "mcp", "MCP"


class ToolStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    TESTING = "testing", "Testing"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


INTERNAL_CATEGORY = "internal"

# Approving or rejecting a custom tool is this permission, not ``is_staff``.
APPROVE_PERMISSION = "registry.approve_tooldefinition"
# Reviewing a tool shared by every tenant (``tenant_id="*"``) reaches them all.
REVIEW_SHARED_PERMISSION = "registry.review_shared_tooldefinition"

# What decides what a tool runs and for whom: the definition hash covers exactly
# these fields, and a custom tool's approval is bound to that hash. The sandbox
# limits are deployment-wide (settings), not per tool, so none is listed here.
HASHED_FIELDS = (
    "name",
    "description",
    "input_schema",
    "implementation",
    "handler_path",
    "tool_type",
    "tenant_id",
    "dependencies",
)


class ToolDefinitionQuerySet(models.QuerySet):
    def live(self) -> ToolDefinitionQuerySet:
        return self.filter(deleted_at__isnull=True)

    def for_tenant(self, tenant_id: str) -> ToolDefinitionQuerySet:
        return self.filter(tenant_id__in=(tenant_id, ALL_TENANTS))

    def callable_by(self, tenant_id: str) -> ToolDefinitionQuerySet:
        """Tools a tenant may execute: approved, enabled, live; internal ones included."""
        return self.live().for_tenant(tenant_id).filter(status=ToolStatus.APPROVED, enabled=True)

    def visible_to(self, tenant_id: str) -> ToolDefinitionQuerySet:
        """The definitional catalog a tenant's model may be offered."""
        return self.callable_by(tenant_id).exclude(category=INTERNAL_CATEGORY)

    def reviewable_by(self, user: object) -> ToolDefinitionQuerySet:
        """The custom tools ``user`` may review: those of ``review_tenants(user)``.

        This is the review scope only; approving also needs ``APPROVE_PERMISSION``.
        """
        custom = self.live().filter(tool_type=ToolType.CUSTOM)
        tenants = review_tenants(user)
        return custom if tenants is None else custom.filter(tenant_id__in=tenants)

    def administrable_by(self, user: object) -> ToolDefinitionQuerySet:
        """What the tool admin lists for ``user``: everything for a superuser; otherwise the
        system and MCP tools of their tenant or shared, and the custom tools they may review."""
        from registry.tenancy import tenant_of

        if getattr(user, "is_superuser", False):
            return self
        others = self.exclude(tool_type=ToolType.CUSTOM).for_tenant(tenant_of(user) or "")
        return self.filter(Q(pk__in=others.values("pk")) | Q(pk__in=self.reviewable_by(user).values("pk")))


def review_tenants(user: object) -> list[str] | None:
    """The tenants whose custom tools ``user`` may review (None: every tenant, for a superuser).

    None of them unless active staff; otherwise their own tenant, plus the shared
    (``*``) tools only with ``REVIEW_SHARED_PERMISSION``.
    """
    from registry.tenancy import tenant_of

    if not (getattr(user, "is_active", False) and getattr(user, "is_staff", False)):
        return []
    if getattr(user, "is_superuser", False):
        return None
    tenants = [tenant for tenant in (tenant_of(user),) if tenant]
    if user.has_perm(REVIEW_SHARED_PERMISSION):  # type: ignore[attr-defined]
        tenants.append(ALL_TENANTS)
    return tenants


class ToolDefinition(models.Model):
    name = models.CharField(max_length=64, unique=True)
    description = models.TextField()
    input_schema = OrderedJSONField(default=dict)
    implementation = models.TextField(blank=True, help_text="Python source (custom), system:NAME or mcp:CONN:NAME.")
    handler_path = models.CharField(max_length=255, blank=True)
    tool_type = models.CharField(max_length=16, choices=ToolType.choices, db_index=True)
    status = models.CharField(max_length=16, choices=ToolStatus.choices, default=ToolStatus.DRAFT, db_index=True)
    enabled = models.BooleanField(default=True)
    category = models.CharField(max_length=64, db_index=True)
    domain = models.CharField(max_length=64, null=True, blank=True)
    replaced_by_model_capability = models.CharField(max_length=64, null=True, blank=True)
    status_message = models.CharField(max_length=200, blank=True)
    large_output = models.BooleanField(default=False)
    parent_tool = models.CharField(max_length=64, blank=True)
    # Custom tools: the tools its code may call through call_tool (sorted names).
    dependencies = models.JSONField(default=list, blank=True)
    version = models.PositiveIntegerField(default=1)
    tenant_id = models.CharField(max_length=64, default=ALL_TENANTS, db_index=True)
    created_by = models.CharField(max_length=128, default="system")
    rejection_reason = models.TextField(blank=True)
    test_results = models.JSONField(default=dict, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)

    # Search: the vector of the text that was embedded, and which model made it.
    embedding = models.BinaryField(null=True, blank=True, editable=False)
    embedding_model = models.CharField(max_length=128, blank=True, editable=False)
    # Hash of what a reviewer approves; approval is bound to it.
    definition_hash = models.CharField(max_length=64, blank=True, editable=False)
    # The definition_hash a staff member approved; a custom tool runs only while they match.
    approved_hash = models.CharField(max_length=64, blank=True, editable=False)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    objects = ToolDefinitionQuerySet.as_manager()

    class Meta:
        db_table = "tool_definitions"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(tool_type__in=ToolType.values), name="tool_type_known"),
            models.CheckConstraint(condition=Q(status__in=ToolStatus.values), name="status_known"),
        ]
        permissions = [
            ("approve_tooldefinition", "Can approve or reject custom tools"),
            ("review_shared_tooldefinition", "Can review custom tools shared by every tenant"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_live(self) -> bool:
        return self.deleted_at is None

    def compute_definition_hash(self) -> str:
        return definition_hash(**{field: getattr(self, field) for field in HASHED_FIELDS})

    def save(self, *args, **kwargs) -> None:
        self.definition_hash = self.compute_definition_hash()
        extra = {"definition_hash", "updated_at"}
        if self.needs_new_approval():
            # An edit after approval is not what the reviewer signed off on.
            self.status = ToolStatus.TESTING
            extra.add("status")
        update_fields = kwargs.get("update_fields")
        if update_fields is not None:
            kwargs["update_fields"] = {*update_fields, *extra}
        super().save(*args, **kwargs)

    def needs_new_approval(self) -> bool:
        return (
            self.tool_type == ToolType.CUSTOM
            and self.status == ToolStatus.APPROVED
            and self.definition_hash != self.approved_hash
        )


def definition_hash(**parts: object) -> str:
    """Stable SHA-256 of the parts of a definition that a reviewer signs off on."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _short_id() -> str:
    return uuid.uuid4().hex[:12]


class JobType(models.TextChoices):
    BUILD = "build", "Build"
    AUDIT = "audit", "Audit"
    REBUILD = "rebuild", "Rebuild"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    BUILDING = "building", "Building"
    TESTING = "testing", "Testing"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    FAILED = "failed", "Failed"


class ToolJobQuerySet(models.QuerySet):
    def for_tenant(self, tenant_id: str) -> ToolJobQuerySet:
        return self.filter(tenant_id=tenant_id)


class ToolJob(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=_short_id, editable=False)
    tool_name = models.CharField(max_length=64)
    job_type = models.CharField(max_length=16, choices=JobType.choices)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    spec = models.JSONField(default=dict)
    result = models.JSONField(default=dict, blank=True)
    progress_pct = models.PositiveSmallIntegerField(default=0)
    tenant_id = models.CharField(max_length=64, db_index=True)
    conversation_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ToolJobQuerySet.as_manager()

    class Meta:
        db_table = "tool_jobs"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(progress_pct__lte=100), name="progress_pct_at_most_100"),
        ]

    def __str__(self) -> str:
        return f"{self.job_type} {self.tool_name} ({self.status})"


class Outcome(models.TextChoices):
    OK = "ok", "Ok"
    HINT = "hint", "Hint"
    ERR = "err", "Error"


class ToolExecutionLogQuerySet(models.QuerySet):
    def for_tenant(self, tenant_id: str) -> ToolExecutionLogQuerySet:
        return self.filter(tenant_id=tenant_id)

    def envelope_tallies(self) -> dict[str, dict]:
        """Per tool: Ok / Hint / Err counts with hint_kind and err_kind sub-tallies."""
        tallies: dict[str, dict] = {}
        rows = self.order_by().values("tool_name", "outcome", "outcome_kind", "success").annotate(n=models.Count("id"))
        for row in rows:
            tally = tallies.setdefault(
                row["tool_name"], {"ok": 0, "hint": 0, "err": 0, "hint_kinds": {}, "err_kinds": {}}
            )
            # Rows written before outcomes were recorded only know success.
            outcome = row["outcome"] or (Outcome.OK if row["success"] else Outcome.ERR)
            tally[outcome] = tally.get(outcome, 0) + row["n"]
            if outcome in (Outcome.HINT, Outcome.ERR) and row["outcome_kind"]:
                kinds = tally[f"{outcome}_kinds"]
                kinds[row["outcome_kind"]] = kinds.get(row["outcome_kind"], 0) + row["n"]
        return dict(sorted(tallies.items()))


class ToolExecutionLog(models.Model):
    """One row per tool call. Written in batches; never updated.

    Indexed for its readers (the conversation's tallies, the staff telemetry page,
    the admin, load_telemetry, tool_stats, the surface floor's scores): by tenant, by
    conversation, by time, and by tool and time (``log_tool_time``, which also serves a
    look-up by tool alone). Every index is written on each of the log's inserts.
    """

    tool_name = models.CharField(max_length=64)
    tenant_id = models.CharField(max_length=64)
    user_id = models.CharField(max_length=64, blank=True)
    conversation_id = models.CharField(max_length=64, blank=True)
    input_data = models.JSONField(default=dict, encoder=LenientJSONEncoder)
    output_summary = models.CharField(max_length=500, blank=True)
    success = models.BooleanField()
    outcome = models.CharField(max_length=8, choices=Outcome.choices, blank=True)
    outcome_kind = models.CharField(max_length=64, blank=True, help_text="hint_kind of a Hint, err_kind of an Err.")
    error = models.TextField(blank=True)  # why the last attempt did not finish
    execution_ms = models.FloatField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = ToolExecutionLogQuerySet.as_manager()

    class Meta:
        db_table = "tool_execution_log"
        ordering = ["-created_at"]
        # Declared here, not as db_index: on PostgreSQL db_index on a text column adds a
        # twin index (varchar_pattern_ops, for LIKE 'prefix%') that no reader of the log asks.
        indexes = [
            models.Index(fields=["tool_name", "created_at"], name="log_tool_time"),
            models.Index(fields=["tenant_id"], name="log_tenant"),
            models.Index(fields=["conversation_id"], name="log_conversation"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} {'ok' if self.success else 'failed'} {self.execution_ms:.1f} ms"


class SeedLog(models.Model):
    """Pinned key/value rows for derived configuration (e.g. the resident floor)."""

    key = models.CharField(max_length=128, unique=True)
    value = models.JSONField(default=dict)
    pinned = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "seed_log"
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key


class ReviewAction(models.TextChoices):
    CREATE = "create", "Created as a draft"
    EDIT = "edit", "Edited"
    SUBMIT = "submit", "Submitted for testing"
    AUDIT = "audit", "Audited"
    APPROVE = "approve", "Approved"
    OVERRIDE = "override", "Approved over a failed audit"
    REJECT = "reject", "Rejected"


APPROVALS = (ReviewAction.APPROVE, ReviewAction.OVERRIDE)


class ToolReview(models.Model):
    """Audit row for a custom tool's lifecycle: who did what to which definition hash.

    Holds the reviewed code, schema, description, dependencies and tenant so the
    next review can show a diff against the last approved version.
    """

    tool = models.ForeignKey(ToolDefinition, on_delete=models.CASCADE, related_name="reviews")
    action = models.CharField(max_length=16, choices=ReviewAction.choices)
    acting_user = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    definition_hash = models.CharField(max_length=64)
    reason = models.TextField(blank=True)
    implementation = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict, blank=True)
    description = models.TextField(blank=True)
    dependencies = models.JSONField(default=list, blank=True)
    tenant_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        db_table = "tool_reviews"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.tool_id} {self.action} {self.definition_hash[:12]}"

    @classmethod
    def record(cls, tool: ToolDefinition, action: str, acting_user: object = None, reason: str = "") -> ToolReview:
        """Write the history row of ``action`` on ``tool``'s current definition."""
        return cls.objects.create(
            tool=tool,
            action=action,
            acting_user=acting_user,
            reason=reason,
            definition_hash=tool.definition_hash,
            implementation=tool.implementation,
            input_schema=tool.input_schema,
            description=tool.description,
            dependencies=list(tool.dependencies or []),
            tenant_id=tool.tenant_id,
        )


class SandboxRun(models.Model):
    """One custom-tool run: which sandbox layers were active and what stopped it, if anything."""

    tool_name = models.CharField(max_length=64, db_index=True)
    tenant_id = models.CharField(max_length=64, db_index=True)
    definition_hash = models.CharField(max_length=64, blank=True)
    ok = models.BooleanField()
    stopped_by = models.CharField(max_length=32, blank=True)
    layers = models.JSONField(default=dict)
    error = models.TextField(blank=True)  # why the last attempt did not finish
    tool_calls = models.PositiveIntegerField(default=0)
    wall_ms = models.FloatField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        db_table = "sandbox_runs"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.tool_name} {'ok' if self.ok else self.stopped_by or 'failed'}"


# --- MCP servers -------------------------------------------------------------


class MCPTransport(models.TextChoices):
    STDIO = "stdio", "stdio (a local process)"
    STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"


class MCPAuthorization(models.TextChoices):
    """Who authorizes Eunice at an OAuth-protected server (registry.mcp.oauth)."""

    NONE = "none", "None (or a static Authorization header)"
    TENANT = "tenant", "OAuth, one tenant connection (staff authorize once)"
    USER = "user", "OAuth, per user (each user authorizes; calls run with their token)"


class MCPStatus(models.TextChoices):
    DISCONNECTED = "disconnected", "Disconnected"
    CONNECTED = "connected", "Connected"
    FAILED = "failed", "Failed"


class ApprovalPolicy(models.TextChoices):
    AUTO = "auto", "Approve new tools automatically"
    MANUAL = "manual", "New tools wait for staff approval"


MCP_NAME_RE = r"^[a-z0-9][a-z0-9_-]{0,31}$"


# ToolDefinition.created_by of a server's tools: this prefix and the server row's id, so
# a new server that reuses a deleted one's name never inherits its tools or approvals.
MCP_CREATED_BY_PREFIX = "mcp:"
# Who may approve an MCP server's tools (and so switch a server to approving them itself).
MCP_APPROVE_PERMISSION = "registry.approve_mcp_tool"


def validate_string_list(value: object) -> None:
    """A JSON list of strings, and nothing else: a string given instead (``"a b"``)
    would otherwise be taken one character at a time. Raises ValidationError."""
    from django.core.exceptions import ValidationError

    if not isinstance(value, list):
        raise ValidationError(f'must be a list of strings, e.g. ["-m", "server"]; got {type(value).__name__}')
    for item in value:
        if not isinstance(item, str):
            raise ValidationError(f"must be a list of strings; item {item!r} is a {type(item).__name__}")


class MCPServerQuerySet(models.QuerySet):
    def for_tenant(self, tenant_id: str) -> MCPServerQuerySet:
        return self.filter(tenant_id=tenant_id)

    def enabled(self) -> MCPServerQuerySet:
        return self.filter(enabled=True)

    def per_user_oauth(self, tenant_id: str, user_id: int) -> MCPServerQuerySet:
        """The tenant's enabled per-user OAuth servers, each with ``authorized``: whether
        ``user_id`` holds a grant for it (the chat page's Connect buttons)."""
        from django.db.models import Exists, OuterRef

        grants = MCPOAuthGrant.objects.filter(server=OuterRef("pk"), user_id=user_id)
        return (
            self.for_tenant(tenant_id)
            .enabled()
            .filter(authorization=MCPAuthorization.USER)
            .annotate(authorized=Exists(grants))
        )

    def with_tool_counts(self) -> MCPServerQuerySet:
        """Each server with its live tools counted in the same query:
        ``tools_approved`` and ``tools_held`` (quarantined, pending or flagged
        for review). A list of servers then costs one query, not two per row."""
        from django.db.models import CharField, Count, OuterRef, Subquery, Value
        from django.db.models.functions import Cast, Coalesce, Concat

        owner = Concat(Value(MCP_CREATED_BY_PREFIX), Cast(OuterRef("pk"), CharField()), output_field=CharField())
        tools = ToolDefinition.objects.live().filter(created_by=owner).order_by().values("created_by")

        def counted(which: Q) -> Coalesce:
            return Coalesce(Subquery(tools.annotate(n=Count("id", filter=which)).values("n")), 0)

        approved = Q(status=ToolStatus.APPROVED)
        return self.annotate(tools_approved=counted(approved), tools_held=counted(~approved))


# The call timeout an MCP server may have, in seconds: long enough for a slow tool,
# short enough that a hung one is given up within the hour.
MCP_TIMEOUT_BOUNDS = (0.1, 3600.0)


class MCPServer(models.Model):
    """One configured MCP server; its tools become rows named by registry.mcp.naming.tool_name.

    Names are unique per tenant. ``env`` and ``headers`` hold secrets: sealed
    at rest, write-only in the API and the admin. ``approved_tools`` maps each
    server-side tool name to the hash (and copy) of the raw definition staff
    last approved: a tool whose definition drifts from it is quarantined. It
    lives on this row, so approvals die with the server, whatever its name.
    ``staff_owned``: created by staff (or the console); only staff may then
    delete, disable, connect or disconnect it (registry.mcp.services).
    """

    name = models.CharField(
        max_length=32,
        validators=[RegexValidator(MCP_NAME_RE, "lower-case letters, digits, _ and -; at most 32")],
    )
    tenant_id = models.CharField(max_length=64, db_index=True)
    transport = models.CharField(max_length=16, choices=MCPTransport.choices)
    command = models.CharField(max_length=500, blank=True)
    args = models.JSONField(default=list, blank=True, validators=[validate_string_list])
    env = SealedJSONField(default=dict, blank=True, purpose=b"eunice.mcp.env")
    url = models.CharField(max_length=2000, blank=True)
    headers = SealedJSONField(default=dict, blank=True, purpose=b"eunice.mcp.headers")
    allow_private_network = models.BooleanField(
        default=False, help_text="Allow a loopback/private URL (development only; staff only)."
    )
    enabled = models.BooleanField(default=True)
    status = models.CharField(max_length=16, choices=MCPStatus.choices, default=MCPStatus.DISCONNECTED)
    last_error = models.TextField(blank=True)
    connected_at = models.DateTimeField(null=True, blank=True)
    approval_policy = models.CharField(max_length=8, choices=ApprovalPolicy.choices, default=ApprovalPolicy.MANUAL)
    call_timeout_seconds = models.FloatField(
        default=120.0,
        validators=[MinValueValidator(MCP_TIMEOUT_BOUNDS[0]), MaxValueValidator(MCP_TIMEOUT_BOUNDS[1])],
        help_text="Seconds a call may take before it is cancelled (0.1 to 3600).",
    )
    idempotent_tools = models.JSONField(default=list, blank=True, validators=[validate_string_list])
    authorization = models.CharField(max_length=8, choices=MCPAuthorization.choices, default=MCPAuthorization.NONE)
    # Credentials staff registered with the authorization server by hand: {"client_id",
    # "client_secret", "issuer"}; empty: Client ID Metadata Document or Dynamic Client Registration.
    oauth_client = SealedJSONField(default=dict, blank=True, purpose=b"eunice.mcp.oauth-client")
    approved_tools = models.JSONField(default=dict, blank=True, editable=False)
    created_by = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    # Rows from before this was recorded count as staff's: the safe side.
    staff_owned = models.BooleanField(default=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = MCPServerQuerySet.as_manager()

    class Meta:
        db_table = "mcp_servers"
        ordering = ["name"]
        verbose_name = "MCP server"
        verbose_name_plural = "My Connections"
        permissions = [("approve_mcp_tool", "Can approve the tools of an MCP server")]
        constraints = [
            models.UniqueConstraint(fields=["tenant_id", "name"], name="mcp_server_name_per_tenant"),
            models.CheckConstraint(condition=Q(transport__in=MCPTransport.values), name="mcp_transport_known"),
            models.CheckConstraint(
                condition=Q(call_timeout_seconds__gt=0),
                name="mcp_timeout_positive",
                violation_error_message="call_timeout_seconds must be more than 0",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def created_by_tag(self) -> str:
        """ToolDefinition.created_by of this server's tools."""
        return f"{MCP_CREATED_BY_PREFIX}{self.pk}"


class MCPOAuthGrantQuerySet(models.QuerySet):
    def owned_by(self, server_id: int, user_id: int | None) -> MCPOAuthGrantQuerySet:
        """The grants of one connection: the tenant's (``user_id`` None) or one user's."""
        return self.filter(server_id=server_id, user_id=user_id)


class MCPOAuthGrant(models.Model):
    """What an authorization server granted one connection to one MCP server.

    One row per server, owner and issuer: the tenant connection (``user`` null) or one
    user's. ``client`` (the registration) and ``tokens`` are sealed at rest. A refresh
    is claimed with ``refreshing_until`` (a conditional update): one process refreshes,
    the others wait for its tokens.
    """

    server = models.ForeignKey(MCPServer, on_delete=models.CASCADE, related_name="oauth_grants")
    user = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    issuer = models.CharField(max_length=2000, blank=True)
    client = SealedJSONField(default=dict, blank=True, purpose=b"eunice.mcp.oauth-client-info")
    tokens = SealedJSONField(default=dict, blank=True, purpose=b"eunice.mcp.oauth-tokens")
    scope = models.CharField(max_length=2000, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    refreshing_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = MCPOAuthGrantQuerySet.as_manager()

    class Meta:
        db_table = "mcp_oauth_grants"
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["server", "user", "issuer"], name="mcp_oauth_grant_per_owner_issuer"),
            models.UniqueConstraint(
                fields=["server", "issuer"], condition=Q(user__isnull=True), name="mcp_oauth_tenant_grant_per_issuer"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.server_id}:{self.user_id or 'tenant'}@{self.issuer}"


# How long a person may take at an authorization server (registry.mcp.oauth.AUTHORIZE_WAIT).
MCP_OAUTH_REQUEST_SECONDS = 600


class MCPOAuthRequestQuerySet(models.QuerySet):
    def expired(self) -> MCPOAuthRequestQuerySet:
        return self.filter(created_at__lt=timezone.now() - timedelta(seconds=MCP_OAUTH_REQUEST_SECONDS))

    def waiting(self, state: str) -> MCPOAuthRequestQuerySet:
        """The authorization under way with ``state``, not answered and not expired."""
        return self.filter(state=state, answered=False).exclude(pk__in=self.expired().values("pk"))


class MCPOAuthRequest(models.Model):
    """One authorization under way: the ``state`` the authorization server will hand back,
    bound to the person who started it and the server, and the code once it is back."""

    state = models.CharField(max_length=200, unique=True)
    server = models.ForeignKey(MCPServer, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="+")
    for_tenant = models.BooleanField(default=False)
    code = models.TextField(blank=True)
    iss = models.CharField(max_length=2000, blank=True)
    error = models.CharField(max_length=500, blank=True)
    answered = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = MCPOAuthRequestQuerySet.as_manager()

    class Meta:
        db_table = "mcp_oauth_requests"


class MCPAuditLog(models.Model):
    """Who changed which MCP server, and how. Written by registry.mcp.services only."""

    action = models.CharField(max_length=32)
    server_name = models.CharField(max_length=32, db_index=True)
    tenant_id = models.CharField(max_length=64, db_index=True)
    actor = models.CharField(max_length=150)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        db_table = "mcp_audit_log"
        ordering = ["-created_at"]
        verbose_name = "MCP audit entry"
        verbose_name_plural = "MCP audit log"

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.server_name}"


class TenantMembershipQuerySet(models.QuerySet):
    def tenant_ids(self, limit: int) -> list[str]:
        """The tenants some user acts for, sorted, at most ``limit``."""
        return list(self.order_by("tenant_id").values_list("tenant_id", flat=True).distinct()[:limit])


class TenantMembership(models.Model):
    """Which tenant a user acts for (REST and admin). A user without one sees no tenant data."""

    user = models.OneToOneField("auth.User", on_delete=models.CASCADE, related_name="tenant_membership")
    tenant_id = models.CharField(max_length=64, db_index=True)

    objects = TenantMembershipQuerySet.as_manager()

    class Meta:
        db_table = "tenant_memberships"

    def __str__(self) -> str:
        return f"{self.user} → {self.tenant_id}"


# --- A person's approval of one tool call ------------------------------------


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Waiting for the person"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"


class ApprovalSource(models.TextChoices):
    TOOL = "tool", "Asked for by the tool itself"
    RULE = "rule", "Asked for by an approval rule (the registry's gate)"


class ApprovalRuleKind(models.TextChoices):
    TOOL = "tool", "One tool, by name"
    MCP_DESTRUCTIVE = "mcp_destructive", "MCP tools that may destroy (destructiveHint)"
    WRITES = "writes", "Tools that write (MCP tools not read-only, custom tools)"
    ALL = "all", "Every tool (tenant-wide)"


class ApprovalRule(models.Model):
    """Staff's choice of which calls wait for a person's approval (registry.approval_rules).

    Checked by the registry's one gate before a call runs, whatever path it came by.
    ``tenant_id`` ``*`` is every tenant's rule. A call no enabled rule covers runs
    as before, at no cost on the dispatch path.
    """

    name = models.CharField(max_length=100)
    tenant_id = models.CharField(max_length=64, default=ALL_TENANTS, db_index=True)
    kind = models.CharField(max_length=16, choices=ApprovalRuleKind.choices, default=ApprovalRuleKind.TOOL)
    tool_name = models.CharField(max_length=64, blank=True, help_text="The tool, for a rule of kind 'One tool'.")
    timeout_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(60), MaxValueValidator(30 * 24 * 3600)],
        help_text="Seconds to decide (60 s to 30 days); empty: EUNICE_APPROVAL_TTL_SECONDS.",
    )
    note = models.CharField(max_length=300, blank=True, help_text="Why the rule exists (shown on the card).")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "approval_rules"
        ordering = ["tenant_id", "kind", "tool_name"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=ApprovalRuleKind.values), name="approval_rule_kind_known"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.kind == ApprovalRuleKind.TOOL and not self.tool_name.strip():
            raise ValidationError({"tool_name": "a rule of kind 'One tool' needs the tool's name"})
        if self.kind != ApprovalRuleKind.TOOL and self.tool_name:
            raise ValidationError(
                {"tool_name": f"a rule of kind {self.kind!r} covers many tools; leave the name empty"}
            )


class PendingApprovalQuerySet(models.QuerySet):
    def for_tenant(self, tenant_id: str) -> PendingApprovalQuerySet:
        return self.filter(tenant_id=tenant_id)

    def undecided(self) -> PendingApprovalQuerySet:
        """Waiting for a click and still decidable (not past ``expires_at``)."""
        return self.filter(status=ApprovalStatus.PENDING, expires_at__gt=timezone.now())


class PendingApproval(models.Model):
    """One tool call that waits for a person's click, bound to its exact arguments.

    Written and decided by registry.approvals only. ``arguments`` is what runs
    when it is approved, ``args_hash`` the hash of the tool name and those
    arguments when the row was made (a row whose arguments were edited since no
    longer matches it), ``shown`` what the person was shown. A row, not memory:
    a pending approval outlives the process that asked for it.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant_id = models.CharField(max_length=64, db_index=True)
    user = models.ForeignKey(
        "auth.User",
        on_delete=models.CASCADE,
        related_name="pending_approvals",
        help_text="Whose call it is: the conversation's owner.",
    )
    # No foreign key: the registry depends on no other app.
    conversation_id = models.CharField(max_length=64, blank=True, db_index=True)
    tool_name = models.CharField(max_length=64)
    arguments = models.JSONField(default=dict)
    args_hash = models.CharField(max_length=64)
    shown = models.JSONField(default=dict, help_text="What the person is shown: the card's fields.")
    status = models.CharField(
        max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING, db_index=True
    )
    decided_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    # Set once, by the call that runs it (a conditional update): an approval runs at most once.
    executed_at = models.DateTimeField(null=True, blank=True)
    outcome = models.TextField(blank=True, help_text="What the approved call returned.")
    source = models.CharField(max_length=8, choices=ApprovalSource.choices, default=ApprovalSource.TOOL)
    tool_use_id = models.CharField(max_length=64, blank=True, help_text="The model's call that asked.")
    original_arguments = models.JSONField(
        null=True, blank=True, help_text="The arguments the model asked for, when the person edited them."
    )
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = PendingApprovalQuerySet.as_manager()

    class Meta:
        db_table = "pending_approvals"
        ordering = ["created_at"]
        permissions = [
            ("decide_pendingapproval", "Can decide another user's pending tool approvals in the same tenant"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=ApprovalStatus.values), name="approval_status_known"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.status})"


class JobRunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class JobRun(models.Model):
    """One background job (``registry.background.enqueue``) and what became of it.

    A run whose worker died under it is found by ``registry.background.reap_lost_runs``
    and queued again, up to EUNICE_JOB_MAX_ATTEMPTS attempts, then failed with the reason.
    """

    id = models.CharField(primary_key=True, max_length=32, default=_short_id, editable=False)
    func = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    group = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=16, choices=JobRunStatus.choices, default=JobRunStatus.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    # The worker running it: which machine, which process (and when that process
    # started, so a recycled pid is not taken for the worker).
    host = models.CharField(max_length=255, blank=True)
    pid = models.IntegerField(null=True, blank=True)
    process_started = models.CharField(max_length=32, blank=True)
    error = models.TextField(blank=True)  # why the last attempt did not finish
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "job_runs"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "host"], name="job_runs_status_host")]

    def __str__(self) -> str:
        return f"{self.func} ({self.status})"
