"""ModelConfig moves here from the registry app; its table ``model_configs`` and rows stay.

The state gains the model, the database is left alone (the table was made by
registry 0001). The content type moves with it, so permissions granted on the
old ``registry.modelconfig`` keep applying.
"""

from django.db import migrations, models


def move_content_type(apps, schema_editor, old="registry", new="llm"):
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    if not content_type.objects.using(db).filter(app_label=new, model="modelconfig").exists():
        content_type.objects.using(db).filter(app_label=old, model="modelconfig").update(app_label=new)


def move_content_type_back(apps, schema_editor):
    move_content_type(apps, schema_editor, old="llm", new="registry")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("registry", "0008_pending_approvals"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ModelConfig",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("role", models.CharField(help_text="e.g. chat, builder, auditor", max_length=64, unique=True)),
                        ("provider", models.CharField(help_text="e.g. anthropic, offline", max_length=64)),
                        ("model", models.CharField(max_length=128)),
                        ("capabilities", models.JSONField(blank=True, default=dict)),
                        ("max_output_tokens", models.PositiveIntegerField(default=4096)),
                        ("input_price_per_mtok", models.DecimalField(decimal_places=4, default=0, max_digits=10)),
                        ("output_price_per_mtok", models.DecimalField(decimal_places=4, default=0, max_digits=10)),
                        ("is_active", models.BooleanField(default=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "db_table": "model_configs",
                        "ordering": ["role"],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_type, move_content_type_back),
    ]
