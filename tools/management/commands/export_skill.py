from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from tools.capability_actions import export_skill
from tools.models import Skill


class Command(BaseCommand):
    help = "Write a tenant's skill as a zip with one top folder named like the skill."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name")
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--out", help="Where to write it (default: NAME.zip here).")

    def handle(self, *args, **options) -> None:
        skill = Skill.objects.for_tenant(options["tenant"]).filter(name=options["name"]).first()
        if skill is None:
            raise CommandError(f"tenant {options['tenant']!r} has no skill named {options['name']!r}")
        out = Path(options["out"] or f"{skill.name}.zip")
        out.write_bytes(export_skill(skill))
        self.stdout.write(f"wrote {out} ({skill.status}, hash {skill.content_hash[:12]})")
