from django.core.management.base import BaseCommand

from registry.management.commands._mcp import server_named
from registry.mcp.manager import get_manager
from registry.mcp.services import Operator, delete_server


class Command(BaseCommand):
    help = "Remove an MCP server and retire its tools."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name")

    def handle(self, *args, **options) -> None:
        delete_server(server_named(options["name"]), acting_user=Operator())
        get_manager().stop()
        self.stdout.write(f"removed {options['name']}")
