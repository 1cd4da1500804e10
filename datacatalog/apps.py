from django.apps import AppConfig


class DataCatalogConfig(AppConfig):
    name = "datacatalog"
    verbose_name = "Data catalog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from datacatalog.sandbox import CatalogDatasets
        from registry.sandbox import datasets

        # The registry reads a conversation's datasets only through this port.
        datasets.provide(CatalogDatasets())
