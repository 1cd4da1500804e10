"""CatalogDataset, GeneratedFile and DataSource now belong to the datacatalog app
(datacatalog 0001): the conversations app forgets them in its state only. Their
tables and rows are kept; their foreign keys to ``conversations`` and to the user
model stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0009_conversation_deleted_at"),
        ("datacatalog", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="CatalogDataset"),
                migrations.DeleteModel(name="GeneratedFile"),
                migrations.DeleteModel(name="DataSource"),
            ],
            database_operations=[],
        ),
    ]
