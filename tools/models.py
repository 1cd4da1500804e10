"""Rows behind the knowledge tools: document corpora and the entity substrate.

Every row carries ``tenant_id`` and every query goes through ``for_tenant``:
one tenant never reads, matches or links another tenant's documents or facts.
Vectors are stored on their rows with a tag naming the model and the embedded
text (see ``tools.lib.hybrid``), so any process can reuse them.
"""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.db import models

from eunice.db.sha256 import Sha256
from tools.lib.primitive_hash import primitive_hash
from tools.lib.skill_format import SkillFolder, archive_hash, from_zip


class TenantQuerySet(models.QuerySet):
    def for_tenant(self, tenant_id: str) -> TenantQuerySet:
        return self.filter(tenant_id=tenant_id)


class Corpus(models.Model):
    tenant_id = models.CharField(max_length=64, db_index=True)
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    created_by = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "knowledge_corpora"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant_id", "name"], name="corpus_name_unique")]

    def __str__(self) -> str:
        return self.name


class Document(models.Model):
    tenant_id = models.CharField(max_length=64, db_index=True)
    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=300)
    # Where the text came from: "upload:NAME", "file:ID", "inline:TITLE" or a URL.
    source = models.CharField(max_length=500)
    format = models.CharField(max_length=16)
    content_hash = models.CharField(max_length=64)
    text = models.TextField()
    conversation_id = models.CharField(max_length=64, blank=True)
    tool_call_id = models.CharField(max_length=128, blank=True)
    # Who indexed it: theirs (and their tenant's staff'); None (indexed by no user): the tenant's.
    # CASCADE, not SET_NULL: a deleted user's document must not become the whole tenant's.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "knowledge_documents"
        ordering = ["id"]
        # One document per source and owner in a corpus: a colleague indexing a file of the
        # same name gets a document of their own instead of replacing another's.
        constraints = [
            models.UniqueConstraint(
                fields=["corpus", "source", "owner"],
                condition=models.Q(owner__isnull=False),
                name="document_source_unique_per_owner",
            ),
            models.UniqueConstraint(
                fields=["corpus", "source"],
                condition=models.Q(owner__isnull=True),
                name="document_source_unique_for_tenant",
            ),
        ]

    def __str__(self) -> str:
        return self.title


class Chunk(models.Model):
    tenant_id = models.CharField(max_length=64, db_index=True)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()
    text = models.TextField()
    embedding = models.BinaryField(null=True)
    embedding_model = models.CharField(max_length=128, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "knowledge_chunks"
        ordering = ["document_id", "position"]


class Entity(models.Model):
    tenant_id = models.CharField(max_length=64, db_index=True)
    entity_type = models.CharField(max_length=64)
    name = models.CharField(max_length=300)
    embedding = models.BinaryField(null=True)
    embedding_model = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "entities"
        ordering = ["entity_type", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.entity_type})"


class EntityAlias(models.Model):
    """Every name an entity answers to (its own name included), case-folded."""

    tenant_id = models.CharField(max_length=64)
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="aliases")
    alias = models.CharField(max_length=300)
    key = models.CharField(max_length=300)

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "entity_aliases"
        indexes = [models.Index(fields=["tenant_id", "key"], name="entity_alias_lookup")]
        constraints = [models.UniqueConstraint(fields=["entity", "key"], name="entity_alias_unique")]


class Provenance(models.Model):
    """Who recorded a row, where and when: the conversation and the tool call."""

    conversation_id = models.CharField(max_length=64, blank=True)
    tool_call_id = models.CharField(max_length=128, blank=True)
    recorded_by = models.CharField(max_length=64, blank=True)
    source = models.CharField(max_length=500, blank=True)
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


class Fact(Provenance):
    tenant_id = models.CharField(max_length=64, db_index=True)
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="facts")
    attribute = models.CharField(max_length=120)
    value = models.JSONField()

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "entity_facts"
        ordering = ["entity_id", "attribute", "recorded_at", "id"]


class EntityLink(Provenance):
    tenant_id = models.CharField(max_length=64, db_index=True)
    source_entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="links_out")
    target_entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="links_in")
    relation = models.CharField(max_length=120)

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "entity_links"
        constraints = [
            models.UniqueConstraint(fields=["source_entity", "target_entity", "relation"], name="entity_link_unique")
        ]


class EntityProjection(models.Model):
    """A named table view of one entity type: chosen attributes as columns."""

    tenant_id = models.CharField(max_length=64, db_index=True)
    name = models.CharField(max_length=120)
    entity_type = models.CharField(max_length=64)
    attributes = models.JSONField(default=list)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "entity_projections"
        constraints = [models.UniqueConstraint(fields=["tenant_id", "name"], name="entity_projection_name_unique")]


class Kit(models.Model):
    """A named bundle of datasets, queries and charts made in one conversation, for the tenant to reuse.

    The datasets are copies (Parquet files under the tenant's ``kits`` directory):
    a kit stays loadable whatever later happens to the conversation it came from.
    """

    tenant_id = models.CharField(max_length=64, db_index=True)
    name = models.CharField(max_length=120)
    description = models.TextField()
    conversation_id = models.CharField(max_length=64, help_text="The conversation it was made in.")
    created_by = models.CharField(max_length=64, blank=True)
    datasets = models.JSONField(default=list, help_text="[{name, path, rows, columns}]")
    queries = models.JSONField(default=list, help_text="[{title, sql}]")
    charts = models.JSONField(default=list, help_text="[create_chart inputs]")
    embedding = models.BinaryField(null=True)
    embedding_model = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "kits"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant_id", "name"], name="kit_name_unique")]

    def __str__(self) -> str:
        return self.name


# Skills and primitives: the capability layer. A row is usable only while the hash of
# what it is now equals the hash staff approved (tools.capability_actions).


class CapabilityStatus(models.TextChoices):
    PENDING = "pending", "Waiting for review"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class CapabilityQuerySet(TenantQuerySet):
    def usable(self) -> CapabilityQuerySet:
        """Approved rows; whether the approval still covers the content is ``Capability.is_usable``."""
        return self.filter(status=CapabilityStatus.APPROVED).exclude(approved_hash="")


class Capability(models.Model):
    """What a skill and a primitive share: a tenant, a name, and a hash-bound review."""

    tenant_id = models.CharField(max_length=64, db_index=True)
    name = models.CharField(max_length=64)
    description = models.TextField()
    status = models.CharField(max_length=16, choices=CapabilityStatus.choices, default=CapabilityStatus.PENDING)
    content_hash = models.CharField(max_length=64, editable=False)
    approved_hash = models.CharField(max_length=64, blank=True, editable=False)
    rejection_reason = models.TextField(blank=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = CapabilityQuerySet.as_manager()

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.name

    def compute_hash(self) -> str:
        raise NotImplementedError

    def is_usable(self) -> bool:
        """Approved, and the approval binds exactly what the row holds now (even after a bulk update)."""
        return (
            self.status == CapabilityStatus.APPROVED
            and bool(self.approved_hash)
            and (self.approved_hash == self.compute_hash())
        )


class Skill(Capability):
    """An Agent Skills folder (tools.lib.skill_format), kept as its canonical zip."""

    archive = models.BinaryField()
    # The SHA-256 of ``archive``, worked out by the database on every write of the row
    # (save, a queryset's update, raw SQL alike); no client can set it. A check of many
    # skills reads it in place of the archives (``tools.skill_shelf.resident``).
    archive_sha256 = models.GeneratedField(
        expression=Sha256("archive"), output_field=models.BinaryField(), db_persist=True
    )

    class Meta:
        db_table = "skills"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant_id", "name"], name="skill_name_unique")]
        indexes = [
            # What resident reads but the description, so SQLite takes archive_sha256 from
            # here: it stores a generated column after the archive, reached in the row only
            # by walking the archive's overflow pages (1.4 ms a turn for ten of 0.1-2 MB).
            models.Index(
                fields=["tenant_id", "status", "name", "approved_hash", "archive_sha256"], name="skill_resident"
            )
        ]
        permissions = [("approve_skill", "Can approve or reject skills")]

    def folder(self) -> SkillFolder:
        """The stored folder. Raises SkillFormatError if the stored archive breaks the format."""
        return from_zip(bytes(self.archive))

    def compute_hash(self) -> str:
        return archive_hash(bytes(self.archive))


class Primitive(Capability):
    """A small typed function run in the sandbox: ``inputs`` in, ``result`` out, checked by examples."""

    input_schema = models.JSONField()
    output_schema = models.JSONField()
    code = models.TextField()
    examples = models.JSONField(default=list)
    # The last validation: {"hash", "passed", "results": [{"input", "expected", "got", "passed", "error"}]}.
    validation = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "primitives"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant_id", "name"], name="primitive_name_unique")]
        permissions = [("approve_primitive", "Can approve or reject primitives")]

    def compute_hash(self) -> str:
        return primitive_hash(
            tenant_id=self.tenant_id,
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            code=self.code,
            examples=self.examples,
        )


class CapabilityReview(models.Model):
    """One action on a skill or a primitive: who, when, on which hash, and why."""

    kind = models.CharField(max_length=16)  # "skill" | "primitive"
    tenant_id = models.CharField(max_length=64, db_index=True)
    name = models.CharField(max_length=64)
    action = models.CharField(max_length=16)  # create | edit | validate | approve | reject
    content_hash = models.CharField(max_length=64)
    acting_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor = models.CharField(max_length=150, blank=True)  # who, when no user row is behind it (the model)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "capability_reviews"
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.action} {self.kind} {self.name}"


class InsightKind(models.TextChoices):
    SCHEMA = "schema", "Extraction schema"
    TAXONOMY = "taxonomy", "Taxonomy"


class InsightDefinitionQuerySet(TenantQuerySet):
    def newest(self, tenant_id: str, kind: str, name: str) -> InsightDefinition | None:
        """The newest version of the tenant's ``kind`` called ``name``, or None."""
        return cast(
            "InsightDefinition | None",
            self.filter(tenant_id=tenant_id, kind=kind, name=name).order_by("-version").first(),
        )

    def names(self, tenant_id: str, kind: str) -> list[str]:
        return sorted(set(self.filter(tenant_id=tenant_id, kind=kind).values_list("name", flat=True)))


class InsightDefinition(models.Model):
    """A named extraction schema or taxonomy of a tenant (create_schema, create_taxonomy).

    Saving a changed definition under a used name adds a version; results name the
    version they were made with, and the tools use the newest.
    """

    tenant_id = models.CharField(max_length=64, db_index=True)
    kind = models.CharField(max_length=16, choices=InsightKind.choices)
    name = models.CharField(max_length=120)
    version = models.PositiveIntegerField()
    description = models.TextField(blank=True)
    # A schema: a JSON Schema of type object. A taxonomy: {"labels": [{label, description, schema?}],
    # "multi_label": bool}.
    definition = models.JSONField()
    created_by = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = InsightDefinitionQuerySet.as_manager()

    class Meta:
        db_table = "insight_definitions"
        ordering = ["kind", "name", "version"]
        constraints = [
            models.UniqueConstraint(fields=["tenant_id", "kind", "name", "version"], name="insight_definition_version")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name} v{self.version}"


class TrainingStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    TRAINING = "training", "Training"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class TrainedModel(models.Model):
    """One version of a tenant's named model (train_model), and the file it is kept in.

    The fitted pipeline is a skops file under the tenant's catalog directory, which
    only the app writes; ``sha256`` is checked and the file's types are held to an
    allow-list before it is loaded (tools.trained_models), so a changed file is refused.
    """

    tenant_id = models.CharField(max_length=64, db_index=True)
    name = models.CharField(max_length=64)
    version = models.PositiveIntegerField()
    conversation_id = models.CharField(max_length=64, blank=True)
    dataset = models.CharField(max_length=64)
    target = models.CharField(max_length=300)
    task = models.CharField(max_length=16)  # tools.lib.modelling.Task
    algorithm = models.CharField(max_length=32)  # "auto" until trained, then the chosen one
    requested = models.JSONField(default=dict)  # the call's choices: features, task, algorithm
    features = models.JSONField(default=dict)  # {"numeric": [...], "categorical": [...], "skipped": {...}}
    classes = models.JSONField(default=list)
    metrics = models.JSONField(default=dict)
    candidates = models.JSONField(default=list)  # every algorithm tried, with its cross-validated score
    # Up to 100 training rows (features only): what SHAP compares a row against.
    background = models.JSONField(default=list)
    rows = models.PositiveIntegerField(default=0)
    cv_rows = models.PositiveIntegerField(default=0)  # the rows the candidates were compared on
    status = models.CharField(max_length=16, choices=TrainingStatus.choices, default=TrainingStatus.QUEUED)
    progress_pct = models.PositiveSmallIntegerField(default=0)
    stage = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    file_name = models.CharField(max_length=200, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    created_by = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "trained_models"
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["tenant_id", "name", "version"], name="trained_model_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version} ({self.status})"
