from django.apps import AppConfig


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "Tool registry"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from eunice import telemetry
        from registry import approval_rules, checks, signals  # noqa: F401  (registers checks and receivers)

        # Off (and the SDK never imported) unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
        telemetry.start()
