from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError

from registry.custom_tools import ReviewConflict, approve_custom_tool, reject_custom_tool
from registry.models import ToolDefinition


class Command(BaseCommand):
    help = (
        "Approve or reject a custom tool in testing, as a staff user with the "
        "registry.approve_tooldefinition permission and the tool in their tenant."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("name")
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--approve", action="store_true")
        action.add_argument("--reject", action="store_true")
        parser.add_argument("--reason", default="", help="Required with --reject.")
        parser.add_argument(
            "--override",
            default="",
            metavar="REASON",
            help="With --approve: approve although the current audit did not pass, saying why.",
        )
        parser.add_argument("--as", dest="username", required=True, help="The staff user acting.")

    def handle(self, *args, **options) -> None:
        try:
            tool = ToolDefinition.objects.get(name=options["name"])
            user = get_user_model().objects.get(username=options["username"])
        except (ToolDefinition.DoesNotExist, get_user_model().DoesNotExist) as exc:
            raise CommandError(str(exc)) from None
        try:
            if options["approve"]:
                tool = approve_custom_tool(tool, acting_user=user, override_reason=options["override"])
            else:
                tool = reject_custom_tool(tool, acting_user=user, reason=options["reason"])
        except (PermissionDenied, ValidationError, ReviewConflict) as exc:
            raise CommandError(" ".join(getattr(exc, "messages", [str(exc)]))) from None
        self.stdout.write(f"{tool.name}: {tool.status} (hash {tool.definition_hash[:12]})")
