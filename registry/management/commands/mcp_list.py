import json

from django.core.management.base import BaseCommand

from registry.models import MCPServer, ToolDefinition


class Command(BaseCommand):
    help = "List MCP servers: name, tenant, transport, status, tools, last error (no secrets)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        rows = [
            {
                "name": s.name,
                "tenant_id": s.tenant_id,
                "transport": s.transport,
                "target": s.url or " ".join([s.command, *s.args]),
                "status": s.status,
                "tools": ToolDefinition.objects.live().filter(created_by=s.created_by_tag).count(),
                "last_error": s.last_error,
            }
            for s in MCPServer.objects.all()
        ]
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        for row in rows:
            error = f"  ({row['last_error']})" if row["last_error"] else ""
            self.stdout.write(f"{row['name']:<20} {row['status']:<12} {row['tools']:>3} tools  {row['target']}{error}")
