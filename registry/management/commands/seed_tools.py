from django.core.management.base import BaseCommand

from registry.schedules import ensure_schedules
from registry.seeding import seed_catalog


class Command(BaseCommand):
    help = (
        "Upsert the system tool catalog into tool_definitions and report what changed; "
        "also registers the periodic jobs (e.g. re-deriving the resident tool floor)."
    )

    def handle(self, *args, **options) -> None:
        report = seed_catalog()
        ensure_schedules()
        if options["verbosity"] > 1:
            for label in ("created", "updated", "retired", "unknown", "conflicts"):
                names = getattr(report, label)
                if names:
                    self.stdout.write(f"{label}: {', '.join(names)}")
        for name in report.unknown:
            self.stderr.write(self.style.WARNING(f"unknown system tool left alone (not in this code): {name}"))
        for name in report.conflicts:
            self.stderr.write(self.style.ERROR(f"not seeded: {name} collides with a non-system tool of that name"))
        if options["verbosity"] > 0:
            self.stdout.write(report.line())
