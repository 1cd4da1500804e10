"""Custom-tool review: the approve permission, fuller history rows, and the new hash.

The definition hash now also covers ``tenant_id`` and ``dependencies``. Every
row's hash is recomputed; an approval carries over to the new hash only where it
was valid under the old one (approved hash == old hash of the row as stored).
Such a tool has no dependencies yet (the field was unused) and runs for the
tenant it has now, so re-approval would ask staff to sign off on nothing new.
An approval that was already void (edited by a bulk update) stays void.
"""

import hashlib
import json

from django.db import migrations, models

OLD_FIELDS = ("name", "description", "input_schema", "implementation", "handler_path", "tool_type")
# A frozen copy of registry.models.HASHED_FIELDS at this migration.
NEW_FIELDS = (*OLD_FIELDS, "tenant_id", "dependencies")


def _hash(tool, fields) -> str:
    parts = {field: getattr(tool, field) for field in fields}
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _rehash(apps, source, target) -> None:
    ToolDefinition = apps.get_model("registry", "ToolDefinition")
    for tool in ToolDefinition.objects.all().iterator():
        changes = {"definition_hash": _hash(tool, target)}
        if tool.approved_hash and tool.approved_hash == _hash(tool, source):
            changes["approved_hash"] = changes["definition_hash"]
        ToolDefinition.objects.filter(pk=tool.pk).update(**changes)


def forwards(apps, schema_editor) -> None:
    _rehash(apps, OLD_FIELDS, NEW_FIELDS)


def backwards(apps, schema_editor) -> None:
    _rehash(apps, NEW_FIELDS, OLD_FIELDS)


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0005_mcp_servers"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="tooldefinition",
            options={
                "ordering": ["name"],
                "permissions": [
                    ("approve_tooldefinition", "Can approve or reject custom tools"),
                    ("review_shared_tooldefinition", "Can review custom tools shared by every tenant"),
                ],
            },
        ),
        migrations.AddField(
            model_name="toolreview",
            name="dependencies",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="toolreview",
            name="tenant_id",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AlterField(
            model_name="toolreview",
            name="action",
            field=models.CharField(
                choices=[
                    ("create", "Created as a draft"),
                    ("edit", "Edited"),
                    ("submit", "Submitted for testing"),
                    ("audit", "Audited"),
                    ("approve", "Approved"),
                    ("override", "Approved over a failed audit"),
                    ("reject", "Rejected"),
                ],
                max_length=16,
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
