from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    verbose_name = "Conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from conversations.catalog.sandbox import CatalogDatasets
        from conversations.working_set import StoredWorkingSets
        from registry import surface
        from registry.sandbox import datasets

        # The registry reads conversation datasets and working sets only through these ports.
        datasets.provide(CatalogDatasets())
        surface.working_sets.install(StoredWorkingSets())
