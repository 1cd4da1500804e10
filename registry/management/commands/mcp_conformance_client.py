import asyncio

from django.core.management.base import BaseCommand, CommandError

from registry.mcp import MCPError


class Command(BaseCommand):
    help = (
        "The official MCP conformance suite's client entry point: connect to URL with Eunice's "
        "own MCP client code and perform the scenario named in MCP_CONFORMANCE_SCENARIO."
    )
    requires_system_checks: list = []

    def add_arguments(self, parser) -> None:
        parser.add_argument("url", help="the scenario server's URL (the suite appends it)")

    def handle(self, *args, **options) -> None:
        from registry.mcp import conformance

        scenario, context = conformance.scenario_from_environment()
        try:
            outcome = asyncio.run(conformance.run(options["url"], scenario, context))
        except MCPError as exc:
            raise CommandError(str(exc)) from None
        for line in outcome.lines:
            self.stdout.write(line)
