import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from registry.custom_tools import register_custom_tool
from registry.models import ALL_TENANTS


class Command(BaseCommand):
    help = "Register a custom tool from a code file; it waits in testing for a staff review."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name")
        parser.add_argument("--code-file", required=True, help="Python source of the tool.")
        parser.add_argument("--schema", default='{"type": "object", "properties": {}}', help="Input JSON Schema.")
        parser.add_argument("--description", required=True)
        parser.add_argument("--tenant", default=ALL_TENANTS, help="Owning tenant (default: every tenant).")
        parser.add_argument("--tests", default="[]", help='Test cases: [{"inputs": {...}, "expect": "text"}].')
        parser.add_argument(
            "--dependencies", default="", help="Comma-separated names of the tools the code may call with call_tool."
        )

    def handle(self, *args, **options) -> None:
        try:
            code = Path(options["code_file"]).read_text()
            schema, tests = json.loads(options["schema"]), json.loads(options["tests"])
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(str(exc)) from None
        try:
            tool = register_custom_tool(
                name=options["name"],
                code=code,
                input_schema=schema,
                description=options["description"],
                tenant_id=options["tenant"],
                dependencies=[d for d in options["dependencies"].split(",") if d.strip()],
                test_cases=tests,
                created_by="cli",
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        audit = (tool.test_results or {}).get("passed")
        self.stdout.write(
            f"{tool.name}: {tool.status}, audit {'passed' if audit else 'failed'} (hash {tool.definition_hash[:12]})"
        )
