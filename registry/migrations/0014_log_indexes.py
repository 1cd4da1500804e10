"""The execution log keeps four indexes, each written on every insert, and no twin:

* its own index on ``tool_name`` goes: ``log_tool_time`` (tool_name, created_at)
  serves every look-up by tool;
* those on ``tenant_id`` and ``conversation_id`` become plain named indexes
  (``log_tenant``, ``log_conversation``) instead of ``db_index``, which on PostgreSQL
  adds a second index to each (``varchar_pattern_ops``, for LIKE 'prefix%') that no
  reader of the log asks.

Done by name rather than by AlterField, which on SQLite copies the whole table (the
log may be large): the old indexes' names are Django's own, read from the database.
On PostgreSQL the plain indexes are renamed (no rebuild); SQLite, which cannot rename
an index, makes each again under its new name.
"""

from django.db import migrations, models

DROPPED = "tool_name"
RENAMED = (("tenant_id", "log_tenant"), ("conversation_id", "log_conversation"))


def _indexes_on(schema_editor, table, column):
    """The names of the (non-unique) indexes on exactly ``column``."""
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return [
        name
        for name, found in constraints.items()
        if found["columns"] == [column] and found["index"] and not (found["primary_key"] or found["unique"])
    ]


def keep_four_indexes(apps, schema_editor):
    model = apps.get_model("registry", "ToolExecutionLog")
    table = model._meta.db_table

    def drop(name):
        quote = schema_editor.quote_name
        schema_editor.execute(schema_editor.sql_delete_index % {"table": quote(table), "name": quote(name)})

    for found in _indexes_on(schema_editor, table, DROPPED):
        drop(found)
    for column, name in RENAMED:
        for found in _indexes_on(schema_editor, table, column):
            if found.endswith("_like"):
                drop(found)
            else:
                old, new = models.Index(fields=[column], name=found), models.Index(fields=[column], name=name)
                schema_editor.rename_index(model, old, new)


def restore_db_indexes(apps, schema_editor):
    model = apps.get_model("registry", "ToolExecutionLog")
    for column, name in RENAMED:  # (first: on SQLite an AlterField makes the table again, without them)
        schema_editor.remove_index(model, models.Index(fields=[column], name=name))
    for column in (DROPPED, *(column for column, _ in RENAMED)):
        field = model._meta.get_field(column)
        unindexed, indexed = field.clone(), field.clone()
        for made, db_index in ((unindexed, False), (indexed, True)):
            made.set_attributes_from_name(column)
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
                migrations.AlterField(
                    model_name="toolexecutionlog",
                    name="conversation_id",
                    field=models.CharField(blank=True, max_length=64),
                ),
                migrations.AlterField(
                    model_name="toolexecutionlog",
                    name="tenant_id",
                    field=models.CharField(max_length=64),
                ),
                migrations.AddIndex(
                    model_name="toolexecutionlog",
                    index=models.Index(fields=["tenant_id"], name="log_tenant"),
                ),
                migrations.AddIndex(
                    model_name="toolexecutionlog",
                    index=models.Index(fields=["conversation_id"], name="log_conversation"),
                ),
            ],
            database_operations=[migrations.RunPython(keep_four_indexes, restore_db_indexes)],
        ),
    ]
