from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    verbose_name = "Conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from conversations.catalog.sandbox import CatalogDatasets
        from registry.sandbox import datasets

        # The sandbox (registry) reads conversation datasets only through this port.
        datasets.provide(CatalogDatasets())
