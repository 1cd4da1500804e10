import json
from datetime import timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from registry.models import ToolExecutionLog


class Command(BaseCommand):
    help = "Per-tool Ok / Hint / Err counts from the execution log, with hint and error kinds."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", help="Only this tenant's calls.")
        parser.add_argument("--days", type=int, help="Only calls of the last N days.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args, **options) -> None:
        logs = ToolExecutionLog.objects.all()
        if options["tenant"]:
            logs = logs.for_tenant(options["tenant"])
        if options["days"]:
            logs = logs.filter(created_at__gte=timezone.now() - timedelta(days=options["days"]))
        tallies = logs.envelope_tallies()
        if options["json"]:
            self.stdout.write(json.dumps(tallies, indent=2))
            return
        self.stdout.write(f"{'tool':<32} {'ok':>7} {'hint':>7} {'err':>7}  kinds")
        for tool, tally in tallies.items():
            kinds = ", ".join(f"{kind}×{n}" for kind, n in {**tally["hint_kinds"], **tally["err_kinds"]}.items())
            self.stdout.write(f"{tool:<32} {tally['ok']:>7} {tally['hint']:>7} {tally['err']:>7}  {kinds}")
