from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    verbose_name = "Conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from conversations.catalog.sandbox import CatalogDatasets
        from conversations.turn_reservations import close_running_turn
        from conversations.working_set import StoredWorkingSets
        from eunice import drain
        from registry import surface
        from registry.sandbox import datasets

        # The registry reads conversation datasets and working sets only through these ports.
        datasets.provide(CatalogDatasets())
        surface.working_sets.install(StoredWorkingSets())
        # A turn the server's stop cancelled is closed as interrupted (docs/operations.md).
        drain.on_interrupted(close_running_turn)
