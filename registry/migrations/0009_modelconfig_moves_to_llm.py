"""ModelConfig now belongs to the llm app (llm 0001): the registry forgets it in
its state only. The table ``model_configs`` and its rows are kept; no model of
any app has a foreign key to it, so none is repointed."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0008_pending_approvals"),
        ("llm", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ModelConfig")],
            database_operations=[],
        ),
    ]
