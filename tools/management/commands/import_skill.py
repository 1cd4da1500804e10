from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from tools.capability_actions import import_skill
from tools.lib.skill_format import MAX_TOTAL_BYTES


class Command(BaseCommand):
    help = "Import a skill folder from a zip for a tenant; it waits for a staff review."

    def add_arguments(self, parser) -> None:
        parser.add_argument("zip", help="The archive: SKILL.md at its top or in one folder named like the skill.")
        parser.add_argument("--tenant", required=True, help="The tenant the skill belongs to.")

    def handle(self, *args, **options) -> None:
        try:
            with Path(options["zip"]).open("rb") as archive:
                data = archive.read(MAX_TOTAL_BYTES + 1)
        except OSError as exc:
            raise CommandError(str(exc)) from None
        if len(data) > MAX_TOTAL_BYTES:
            raise CommandError(f"the archive is larger than {MAX_TOTAL_BYTES:,} bytes")
        try:
            skill = import_skill(data, tenant_id=options["tenant"], actor="cli")
        except (ValueError, ValidationError) as exc:  # SkillFormatError and InputTooLarge are ValueErrors
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{skill.name}: {skill.status} (hash {skill.content_hash[:12]}) for tenant {skill.tenant_id}")
