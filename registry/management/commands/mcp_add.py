import shlex

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from registry.mcp.oauth import connect_url
from registry.mcp.services import Operator, create_server
from registry.models import ApprovalPolicy, MCPAuthorization, MCPTransport


class Command(BaseCommand):
    help = "Add an MCP server (stdio command or Streamable HTTP URL). Connect it with mcp_connect."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "name", help="Connection name, unique in its tenant; tools become mcp_<tenant tag>_<name>_<tool>."
        )
        how = parser.add_mutually_exclusive_group(required=True)
        how.add_argument("--stdio", metavar="COMMAND", help='The command and its args, e.g. "uvx mcp-server-time".')
        how.add_argument("--url", help="A Streamable HTTP endpoint.")
        parser.add_argument("--allow-private", action="store_true", help="Allow a loopback/private URL (development).")
        parser.add_argument("--tenant", default="default", help="Tenant id (default: default).")
        parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="Server environment.")
        parser.add_argument("--header", action="append", default=[], metavar="KEY=VALUE", help="HTTP header.")
        parser.add_argument(
            "--approval",
            choices=[ApprovalPolicy.MANUAL, ApprovalPolicy.AUTO],
            default=ApprovalPolicy.MANUAL,
            help="manual: each tool waits for staff approval whenever it appears; "
            "auto: tools are approved as first listed (default: manual).",
        )
        parser.add_argument(
            "--oauth",
            choices=[MCPAuthorization.TENANT, MCPAuthorization.USER],
            help="An OAuth-protected server: tenant (staff authorize once, in the admin) or user "
            "(each user authorizes from the chat page). docs/mcp.md, OAuth.",
        )

    def handle(self, *args, **options) -> None:
        fields: dict = {"allow_private_network": options["allow_private"], "approval_policy": options["approval"]}
        if options["stdio"]:
            argv = shlex.split(options["stdio"])
            if not argv:
                raise CommandError("--stdio needs a command")
            fields.update(transport=MCPTransport.STDIO, command=argv[0], args=argv[1:], env=_pairs(options["env"]))
        else:
            fields.update(transport=MCPTransport.STREAMABLE_HTTP, url=options["url"], headers=_pairs(options["header"]))
            if options["oauth"]:
                fields["authorization"] = options["oauth"]
        try:
            server = create_server(acting_user=Operator(), tenant_id=options["tenant"], name=options["name"], **fields)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        if server.authorization != MCPAuthorization.NONE:
            self.stdout.write(f"added {server.name} ({server.transport}); authorize it at {connect_url(server.pk)}")
            return
        self.stdout.write(
            f"added {server.name} ({server.transport}); connect it with: manage.py mcp_connect {server.name}"
        )


def _pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CommandError(f"{item!r} is not KEY=VALUE")
        pairs[key] = value
    return pairs
