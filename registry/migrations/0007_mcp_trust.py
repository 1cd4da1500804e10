"""MCP trust: servers named per tenant, who created them, sealed env/headers,
the approve permission, and tool rows bound to the server row (not its name).

Existing servers count as staff's (staff_owned=True): the safe side. Their
env and headers are sealed in place; their tool rows are re-tagged to the
server's id and renamed to the tenant-scoped names.
"""

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import registry.fields

ENV, HEADERS = b"eunice.mcp.env", b"eunice.mcp.headers"


def _seal(apps, schema_editor) -> None:
    import json

    from registry.sealing import seal

    MCPServer = apps.get_model("registry", "MCPServer")
    for server in MCPServer.objects.all():
        server.sealed_env = seal(json.dumps(server.env, sort_keys=True), ENV) if server.env else ""
        server.sealed_headers = seal(json.dumps(server.headers, sort_keys=True), HEADERS) if server.headers else ""
        server.save(update_fields=["sealed_env", "sealed_headers"])


def _unseal(apps, schema_editor) -> None:
    import json

    from registry.sealing import unseal

    MCPServer = apps.get_model("registry", "MCPServer")
    for server in MCPServer.objects.all():
        server.env = json.loads(unseal(server.sealed_env, ENV) or "{}")
        server.headers = json.loads(unseal(server.sealed_headers, HEADERS) or "{}")
        server.save(update_fields=["env", "headers"])


def _retag_tools(apps, schema_editor) -> None:
    from registry.mcp.naming import tool_name

    MCPServer = apps.get_model("registry", "MCPServer")
    ToolDefinition = apps.get_model("registry", "ToolDefinition")
    for server in MCPServer.objects.all():
        for row in ToolDefinition.objects.filter(created_by=f"mcp:{server.name}"):
            tool = row.implementation.split(":", 2)[-1]
            row.name = tool_name(server.tenant_id, server.name, tool)
            row.implementation = f"mcp:{server.pk}:{tool}"
            row.created_by = f"mcp:{server.pk}"
            row.save(update_fields=["name", "implementation", "created_by"])


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0006_review_scope"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="mcpserver",
            options={
                "ordering": ["name"],
                "permissions": [("approve_mcp_tool", "Can approve the tools of an MCP server")],
                "verbose_name": "MCP server",
                "verbose_name_plural": "My Connections",
            },
        ),
        migrations.AddField(
            model_name="mcpserver",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="mcpserver",
            name="staff_owned",
            field=models.BooleanField(default=True, editable=False),
        ),
        migrations.AlterField(
            model_name="mcpserver",
            name="name",
            field=models.CharField(
                max_length=32,
                validators=[
                    django.core.validators.RegexValidator(
                        "^[a-z0-9][a-z0-9_-]{0,31}$", "lower-case letters, digits, _ and -; at most 32"
                    )
                ],
            ),
        ),
        migrations.AddConstraint(
            model_name="mcpserver",
            constraint=models.UniqueConstraint(fields=("tenant_id", "name"), name="mcp_server_name_per_tenant"),
        ),
        migrations.AddField(model_name="mcpserver", name="sealed_env", field=models.TextField(blank=True, default="")),
        migrations.AddField(
            model_name="mcpserver", name="sealed_headers", field=models.TextField(blank=True, default="")
        ),
        migrations.RunPython(_seal, _unseal),
        migrations.RemoveField(model_name="mcpserver", name="env"),
        migrations.RemoveField(model_name="mcpserver", name="headers"),
        migrations.RenameField(model_name="mcpserver", old_name="sealed_env", new_name="env"),
        migrations.RenameField(model_name="mcpserver", old_name="sealed_headers", new_name="headers"),
        migrations.AlterField(
            model_name="mcpserver",
            name="env",
            field=registry.fields.SealedJSONField(blank=True, default=dict, purpose=ENV),
        ),
        migrations.AlterField(
            model_name="mcpserver",
            name="headers",
            field=registry.fields.SealedJSONField(blank=True, default=dict, purpose=HEADERS),
        ),
        migrations.RunPython(_retag_tools, migrations.RunPython.noop),
    ]
