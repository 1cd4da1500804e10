"""Bundles: the named sets of approved tools a tenant serves to outside MCP clients.

A bundle is served at ``/mcp/<slug>/`` to the tenant's own users and API tokens
(mcpserver/endpoint.py). It names tools; the endpoint serves those of them the
tenant's model could be offered now (approved, enabled, able to run), so a tool
whose approval is withdrawn leaves every bundle at once, and one approved later
joins the bundles that name it (or that serve ``all_tools``).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models


class BundleQuerySet(models.QuerySet["Bundle"]):
    def for_tenant(self, tenant_id: str) -> BundleQuerySet:
        return self.filter(tenant_id=tenant_id)

    def served(self, tenant_id: str, slug: str) -> Bundle | None:
        """The enabled bundle ``slug`` of the tenant, or None."""
        return self.filter(tenant_id=tenant_id, slug=slug, enabled=True).first()


SLUG = RegexValidator(r"^[a-z0-9][a-z0-9_-]{0,63}$", "lower-case letters, digits, '-' and '_', 1-64 characters")


class Bundle(models.Model):
    tenant_id = models.CharField(max_length=64, db_index=True)
    slug = models.CharField(max_length=64, validators=[SLUG], help_text="Served at /mcp/<slug>/.")
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True, help_text="Told to the MCP client as the server's instructions.")
    all_tools = models.BooleanField(default=False, help_text="Serve every tool the tenant may use, not only `tools`.")
    tools = models.JSONField(default=list, blank=True, help_text="The names of the tools served.")
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = BundleQuerySet.as_manager()

    class Meta:
        db_table = "mcp_bundles"
        ordering = ("tenant_id", "slug")
        constraints = [models.UniqueConstraint(fields=("tenant_id", "slug"), name="bundle_slug_unique_per_tenant")]

    def __str__(self) -> str:
        return f"{self.slug} ({self.tenant_id})"

    def clean(self) -> None:
        if not isinstance(self.tools, list) or not all(isinstance(name, str) for name in self.tools):
            raise ValidationError({"tools": "a list of tool names"})
        if not self.all_tools and not self.tools:
            raise ValidationError({"tools": "name at least one tool, or tick `all tools`"})

    def names(self) -> frozenset[str] | None:
        """The tool names this bundle serves; None for every tool the tenant may use."""
        return None if self.all_tools else frozenset(self.tools)
