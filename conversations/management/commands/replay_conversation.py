import json
from dataclasses import asdict

from django.core.management.base import BaseCommand, CommandError

from conversations.models import Conversation
from conversations.replay import replay


class Command(BaseCommand):
    help = (
        "Rebuild a conversation's events and assistant messages from its recorded effects and "
        "compare them, byte for byte, with what was persisted live. Exits 1 on a difference."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("conversation_id")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        conversation = Conversation.objects.filter(pk=options["conversation_id"]).first()
        if conversation is None:
            raise CommandError(f"no conversation {options['conversation_id']!r}")
        report = replay(conversation)
        if options["json"]:
            self.stdout.write(json.dumps(asdict(report)))
        elif report.identical:
            extra = f" ({report.interrupted} interrupted)" if report.interrupted else ""
            running = f"; {report.running} turn(s) still running, not compared" if report.running else ""
            self.stdout.write(
                f"replayed {report.turns} turn(s){extra}: {report.events} events and {report.messages} "
                f"message(s), identical to what was persisted{running}"
            )
        else:
            self.stdout.write(f"replay differs: {report.first_difference}")
        if not report.identical:
            raise SystemExit(1)
