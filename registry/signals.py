"""Keep the registry's in-memory definitions in step with the table."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from registry.models import ToolDefinition


@receiver([post_save, post_delete], sender=ToolDefinition)
def _definitions_changed(**_: object) -> None:
    from registry.registry import get_registry

    get_registry().invalidate()
