import json

from django.core.management.base import BaseCommand

from registry.models import ToolDefinition
from registry.registry import get_registry


class Command(BaseCommand):
    help = "List live tool definitions (optionally only those a tenant may call), and why any cannot run."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", help="Only tools this tenant may call.")
        parser.add_argument("--json", action="store_true", help="Print a JSON list.")

    def handle(self, *args, **options) -> None:
        tools = ToolDefinition.objects.live()
        if options["tenant"]:
            tools = tools.callable_by(options["tenant"])
        rows = list(tools.order_by("tool_type", "name").values("name", "tool_type", "status", "category"))
        registry = get_registry()
        definitions = registry.definitions()
        for row in rows:
            definition = definitions.get(row["name"])
            # registry.availability: the one check that decides whether a tool is offered.
            # With --tenant, also what that tenant holds (a skill tool needs one of its skills).
            why_not = registry.why_unavailable(definition, options["tenant"]) if definition else "it is not loaded"
            row["unavailable"] = why_not
        if options["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        width = max((len(r["name"]) for r in rows), default=4)
        for row in rows:
            why = f"  unavailable: {row['unavailable']}" if row["unavailable"] else ""
            self.stdout.write(
                f"{row['name']:<{width}}  {row['tool_type']:<6}  {row['status']:<8}  {row['category']}{why}"
            )
        offered = sum(1 for r in rows if not r["unavailable"])
        self.stdout.write(f"{len(rows)} tool(s), {offered} able to run")
