"""manage.py fake_model_server: serve a scripted model API on 127.0.0.1 for demos."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from llm.scripted import ScriptedChatCompletionsServer, ScriptedMessagesServer, load_script

SERVERS = {"messages": ScriptedMessagesServer, "chat": ScriptedChatCompletionsServer}


class Command(BaseCommand):
    help = (
        "Serve POST /v1/messages (or, with --api chat, the OpenAI-compatible "
        "/v1/chat/completions) on 127.0.0.1 from a script of turns (see "
        "llm/scripted/script.py for the format). Point Eunice at it with "
        "ANTHROPIC_BASE_URL=<printed URL> and any ANTHROPIC_API_KEY (or a ModelConfig "
        "row with provider openai and that base URL). No model is ever called."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--script", required=True, help='JSON file: {"turns": [...]}')
        parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
        parser.add_argument("--api-key", default=None, help="refuse requests with another x-api-key (401)")
        parser.add_argument("--max-requests", type=int, default=None, help="exit after answering this many")
        parser.add_argument("--api", choices=sorted(SERVERS), default="messages", help="the API to speak")

    def handle(self, *args: object, **options: object) -> None:
        try:
            turns = load_script(str(options["script"]))
            server = SERVERS[str(options["api"])](
                turns,
                port=int(options["port"]),
                api_key=options["api_key"],  # type: ignore[arg-type]
                max_requests=options["max_requests"],  # type: ignore[arg-type]
            )
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot serve {options['script']}: {exc}") from None
        if options["api"] == "chat":
            self.stdout.write(f"Scripted Chat Completions API on {server.url} ({len(turns)} turns)")
            self.stdout.write(f"  OPENAI_BASE_URL={server.url} (or a ModelConfig row: provider openai, that base URL)")
        else:
            self.stdout.write(f"Scripted Messages API on {server.url} ({len(turns)} turns)")
            self.stdout.write(f"  ANTHROPIC_BASE_URL={server.url} ANTHROPIC_API_KEY=anything")
        self.stdout.flush()
        with server:
            try:
                server.wait_until_done()
            except KeyboardInterrupt:
                pass
        self.stdout.write(f"Answered {len(server.requests)} requests; {server.turns_left} turns left.")
        for failure in server.failures:
            self.stderr.write(f"  ✗ {failure}")
