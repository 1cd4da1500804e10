"""manage.py fake_model_server: serve a scripted model API on 127.0.0.1 for demos."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from llm.scripted import ScriptedChatCompletionsServer, ScriptedMessagesServer, ScriptedResponsesServer, load_script

# The API to speak: its server, its name, and how to point Eunice at it ({url}: the server's).
SERVERS: dict[str, tuple[type[ScriptedMessagesServer], str, str]] = {
    "messages": (ScriptedMessagesServer, "Messages API", "ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY=anything"),
    "chat": (
        ScriptedChatCompletionsServer,
        "Chat Completions API",
        "OPENAI_BASE_URL={url} (or a ModelConfig row: provider openai, that base URL)",
    ),
    "responses": (
        ScriptedResponsesServer,
        "Responses API",
        "a ModelConfig row: provider openai_responses, base URL {url}",
    ),
}


class Command(BaseCommand):
    help = (
        "Serve POST /v1/messages (or, with --api chat or responses, the OpenAI-compatible "
        "/v1/chat/completions or /v1/responses) on 127.0.0.1 from a script of turns (see "
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
            server_class, api, pointer = SERVERS[str(options["api"])]
            server = server_class(
                turns,
                port=int(options["port"]),
                api_key=options["api_key"],  # type: ignore[arg-type]
                max_requests=options["max_requests"],  # type: ignore[arg-type]
            )
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot serve {options['script']}: {exc}") from None
        self.stdout.write(f"Scripted {api} on {server.url} ({len(turns)} turns)")
        self.stdout.write("  " + pointer.format(url=server.url))
        self.stdout.flush()
        with server:
            try:
                server.wait_until_done()
            except KeyboardInterrupt:
                pass
        self.stdout.write(f"Answered {len(server.requests)} requests; {server.turns_left} turns left.")
        for failure in server.failures:
            self.stderr.write(f"  ✗ {failure}")
