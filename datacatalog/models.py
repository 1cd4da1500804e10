"""The data catalog's rows: a conversation's datasets, the tenant's files, its datasources.

``Conversation`` is named by string (``conversations.Conversation``): this app sits
below the conversations app and never imports it (docs/architecture.md).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class CatalogDatasetQuerySet(models.QuerySet):
    def in_conversation(self, tenant_id: str, conversation_id: str) -> CatalogDatasetQuerySet:
        return self.filter(tenant_id=tenant_id, conversation_id=conversation_id)


class CatalogDataset(models.Model):
    """A dataset in a conversation's catalog: a Parquet file plus what it is and where it came from."""

    tenant_id = models.CharField(max_length=64, db_index=True)
    conversation = models.ForeignKey("conversations.Conversation", on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=64)
    path = models.CharField(max_length=500)
    rows = models.PositiveBigIntegerField(default=0)
    columns = models.JSONField(default=list, blank=True, help_text="[{name, dtype}] as saved.")
    size_bytes = models.PositiveBigIntegerField(default=0)
    source = models.CharField(max_length=16, help_text="upload, tool or file.")
    source_detail = models.CharField(max_length=255, blank=True, help_text="File name or tool name.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = CatalogDatasetQuerySet.as_manager()

    class Meta:
        db_table = "catalog_datasets"
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["conversation", "name"], name="dataset_name_once")]

    def __str__(self) -> str:
        return self.name


class DataSourceQuerySet(models.QuerySet):
    def for_tenant(self, tenant_id: str) -> DataSourceQuerySet:
        return self.filter(tenant_id=tenant_id)


class DataSource(models.Model):
    """An external database or file a tenant's tools may query read-only."""

    class Kind(models.TextChoices):
        POSTGRES = "postgres", "PostgreSQL"
        SQLITE = "sqlite", "SQLite file"
        CSV = "csv", "CSV file"
        PARQUET = "parquet", "Parquet file"

    tenant_id = models.CharField(max_length=64, db_index=True)
    name = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # Host/port/database/user for PostgreSQL, the file path otherwise; never a password.
    location = models.JSONField(default=dict, blank=True)
    # Fernet token of the password (key derived from SECRET_KEY); write-only everywhere.
    secret = models.TextField(blank=True)
    created_by = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = DataSourceQuerySet.as_manager()

    class Meta:
        db_table = "datasources"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant_id", "name"], name="datasource_name_once")]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:  # never shows the secret
        return f"<DataSource {self.tenant_id}/{self.name} {self.kind}>"


class GeneratedFile(models.Model):
    """A file on the tenant's disk: an export, a generated document or a user's upload.

    Whose it is (datacatalog.access.readable_files): the user who
    uploaded it (``user``), else the owner of the conversation it was made in;
    neither (made outside any conversation, by no user): the tenant's.
    """

    tenant_id = models.CharField(max_length=64, db_index=True)
    conversation = models.ForeignKey(
        "conversations.Conversation", null=True, on_delete=models.SET_NULL, related_name="files"
    )
    # CASCADE, not SET_NULL: a deleted user's upload must not become the whole tenant's.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    filename = models.CharField(max_length=255)
    path = models.CharField(max_length=500)
    mime_type = models.CharField(max_length=128, blank=True)
    size_bytes = models.PositiveBigIntegerField(default=0)
    source_tool = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "generated_files"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.filename
