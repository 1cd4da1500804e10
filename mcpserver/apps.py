from django.apps import AppConfig


class MCPServerConfig(AppConfig):
    name = "mcpserver"
    verbose_name = "MCP endpoint"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from mcpserver.redirects import narrow_application_validation

        narrow_application_validation()
