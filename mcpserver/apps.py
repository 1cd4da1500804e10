from django.apps import AppConfig


class MCPServerConfig(AppConfig):
    name = "mcpserver"
    verbose_name = "MCP endpoint"
    default_auto_field = "django.db.models.BigAutoField"
