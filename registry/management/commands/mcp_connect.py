from django.core.management.base import BaseCommand, CommandError

from registry.management.commands._mcp import server_named
from registry.mcp import MCPError
from registry.mcp.manager import get_manager
from registry.mcp.services import Operator, connect_server


class Command(BaseCommand):
    help = "Connect an MCP server and register its tools."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name")

    def handle(self, *args, **options) -> None:
        try:
            found = connect_server(server_named(options["name"]), acting_user=Operator())
        except MCPError as exc:
            raise CommandError(str(exc)) from None
        finally:
            get_manager().stop()
        self.stdout.write(f"connected {options['name']}: {found['tools_discovered']} tool(s)")
        for name in found["tool_names"]:
            self.stdout.write(f"  {name}")
