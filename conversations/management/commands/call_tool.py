import json

from django.core.management.base import BaseCommand, CommandError

from registry.context import ToolContext
from registry.execlog import writer
from registry.mcp.manager import get_manager
from registry.registry import get_registry


class Command(BaseCommand):
    help = (
        "Run one tool through the registry's dispatch path and print what the model would "
        "read. Exits 0 on success and 1 on error."
    )
    # The system checks import every view and URL (the model SDKs, the REST schema, the
    # admin) to check the server's configuration; one tool call needs none of it.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="Tool name.")
        parser.add_argument("--input", default="{}", help="Inputs as a JSON object.")
        parser.add_argument("--tenant", default="default", help="Tenant id (default: default).")
        parser.add_argument("--user", default="cli", help="User id recorded in the log.")
        parser.add_argument("--conversation", help="Conversation id; created for the tenant if it does not exist.")

    def handle(self, *args, **options) -> None:
        try:
            inputs = json.loads(options["input"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--input is not valid JSON: {exc.msg} at character {exc.pos}") from None
        if not isinstance(inputs, dict):
            raise CommandError('--input must be a JSON object, e.g. \'{"query": "chart"}\'')
        conversation_id = None
        if options["conversation"]:
            conversation_id = self._conversation(options["conversation"], options["tenant"])
        context = ToolContext(tenant_id=options["tenant"], user_id=options["user"], conversation_id=conversation_id)
        try:
            result = get_registry().execute_tool(options["name"], inputs, context)
        finally:
            get_manager().stop()  # closes any MCP session this call opened
        writer().flush()
        self.stdout.write(result.content)
        if result.error is not None:
            raise SystemExit(1)

    def _conversation(self, conversation_id: str, tenant_id: str) -> str:
        from conversations.models import Conversation

        conversation, _ = Conversation.objects.get_or_create(id=conversation_id, defaults={"tenant_id": tenant_id})
        if conversation.tenant_id != tenant_id:
            raise CommandError(f"conversation {conversation_id!r} does not belong to tenant {tenant_id!r}")
        return conversation.id
