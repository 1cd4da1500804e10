"""CatalogDataset, GeneratedFile and DataSource move here from the conversations app;
their tables (``catalog_datasets``, ``generated_files``, ``datasources``) and rows stay.

The state gains the models, the database is left alone (the tables were made by
conversations 0003 to 0005). The content types move with them, so permissions
granted on the old ``conversations.<model>`` keep applying.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MOVED = ("catalogdataset", "generatedfile", "datasource")


def move_content_types(apps, schema_editor, old="conversations", new="datacatalog"):
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MOVED:
        if not content_type.objects.using(db).filter(app_label=new, model=model).exists():
            content_type.objects.using(db).filter(app_label=old, model=model).update(app_label=new)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, old="datacatalog", new="conversations")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("conversations", "0007_working_set_used_at"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="DataSource",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("tenant_id", models.CharField(db_index=True, max_length=64)),
                        ("name", models.CharField(max_length=64)),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("postgres", "PostgreSQL"),
                                    ("sqlite", "SQLite file"),
                                    ("csv", "CSV file"),
                                    ("parquet", "Parquet file"),
                                ],
                                max_length=16,
                            ),
                        ),
                        ("location", models.JSONField(blank=True, default=dict)),
                        ("secret", models.TextField(blank=True)),
                        ("created_by", models.CharField(blank=True, max_length=64)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "db_table": "datasources",
                        "ordering": ["name"],
                        "constraints": [
                            models.UniqueConstraint(fields=("tenant_id", "name"), name="datasource_name_once")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="GeneratedFile",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("tenant_id", models.CharField(db_index=True, max_length=64)),
                        ("filename", models.CharField(max_length=255)),
                        ("path", models.CharField(max_length=500)),
                        ("mime_type", models.CharField(blank=True, max_length=128)),
                        ("size_bytes", models.PositiveBigIntegerField(default=0)),
                        ("source_tool", models.CharField(blank=True, max_length=64)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "conversation",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="files",
                                to="conversations.conversation",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "generated_files",
                        "ordering": ["-created_at"],
                    },
                ),
                migrations.CreateModel(
                    name="CatalogDataset",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("tenant_id", models.CharField(db_index=True, max_length=64)),
                        ("name", models.CharField(max_length=64)),
                        ("path", models.CharField(max_length=500)),
                        ("rows", models.PositiveBigIntegerField(default=0)),
                        ("columns", models.JSONField(blank=True, default=list, help_text="[{name, dtype}] as saved.")),
                        ("size_bytes", models.PositiveBigIntegerField(default=0)),
                        ("source", models.CharField(help_text="upload, tool or file.", max_length=16)),
                        (
                            "source_detail",
                            models.CharField(blank=True, help_text="File name or tool name.", max_length=255),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "conversation",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="datasets",
                                to="conversations.conversation",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalog_datasets",
                        "ordering": ["created_at", "id"],
                        "constraints": [
                            models.UniqueConstraint(fields=("conversation", "name"), name="dataset_name_once")
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
