import json

from django.core.management.base import BaseCommand, CommandError

from registry.registry import get_registry
from registry.surface import MODES, compose


class Command(BaseCommand):
    help = "Print the tools one model call would be offered, each with why it is there."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--conversation", help="Conversation id (its tenant and working set).")
        parser.add_argument("--tenant", help="Tenant id, when no conversation is given.")
        parser.add_argument("--mode", choices=MODES, default="chat")
        parser.add_argument("--json", action="store_true", help="Print a JSON list of {name, reason}.")

    def handle(self, *args, **options) -> None:
        tenant, namespace = options["tenant"], ""
        if options["conversation"]:
            from conversations.models import Conversation

            conversation = Conversation.objects.filter(id=options["conversation"]).first()
            if conversation is None:
                raise CommandError(f"no conversation {options['conversation']!r}")
            if tenant and tenant != conversation.tenant_id:
                raise CommandError(f"conversation {conversation.id!r} does not belong to tenant {tenant!r}")
            tenant, namespace = conversation.tenant_id, conversation.namespace_id
        if not tenant:
            raise CommandError("give --conversation or --tenant")
        entries = compose(
            get_registry(),
            tenant,
            mode=options["mode"],
            conversation_id=options["conversation"],
            namespace_id=namespace,
        )
        if options["json"]:
            self.stdout.write(json.dumps([{"name": e.name, "reason": e.reason} for e in entries], indent=2))
            return
        for entry in entries:
            self.stdout.write(f"{entry.name:<40} {entry.reason}")
        self.stdout.write(f"{len(entries)} tool(s), mode {options['mode']}")
