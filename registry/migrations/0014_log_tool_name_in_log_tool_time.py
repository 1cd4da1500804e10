"""The execution log's own index on ``tool_name`` goes: ``log_tool_time`` (tool_name,
created_at) serves every query by tool, and each index is written on every insert.

Dropped by name rather than by AlterField, which on SQLite copies the whole table
into a new one (the log may be large); the index's name is Django's own, read from
the database.
"""

from django.db import migrations, models


def drop_tool_name_indexes(apps, schema_editor):
    """DROP INDEX every index on exactly ``tool_name`` (on PostgreSQL also its ``_like``)."""
    model = apps.get_model("registry", "ToolExecutionLog")
    table = model._meta.db_table
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    for name, found in constraints.items():
        if found["columns"] == ["tool_name"] and found["index"] and not (found["primary_key"] or found["unique"]):
            quote = schema_editor.quote_name
            schema_editor.execute(schema_editor.sql_delete_index % {"table": quote(table), "name": quote(name)})


def restore_tool_name_index(apps, schema_editor):
    model = apps.get_model("registry", "ToolExecutionLog")
    field = model._meta.get_field("tool_name")
    unindexed, indexed = field.clone(), field.clone()
    for made, db_index in ((unindexed, False), (indexed, True)):
        made.set_attributes_from_name("tool_name")
        made.model = model
        made.db_index = db_index
    schema_editor.alter_field(model, unindexed, indexed)


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0013_mcp_oauth_grants"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="toolexecutionlog",
                    name="tool_name",
                    field=models.CharField(max_length=64),
                ),
            ],
            database_operations=[migrations.RunPython(drop_tool_name_indexes, restore_tool_name_index)],
        ),
    ]
