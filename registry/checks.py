"""System checks for settings the tool system depends on."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register


@register()
def check_tool_system_settings(app_configs=None, **kwargs) -> list:
    problems = []
    q = settings.Q_CLUSTER
    if q.get("retry", 0) <= q.get("timeout", 0):
        problems.append(
            Error(
                "Q_CLUSTER['retry'] must be larger than Q_CLUSTER['timeout'], "
                "or a slow task is handed to a second worker and runs twice.",
                id="eunice.E001",
            )
        )
    if settings.EXECUTION_LOG_FLUSH_SECONDS > 60:
        problems.append(
            Warning(
                "EUNICE_LOG_FLUSH_SECONDS is over a minute: a crash loses that much execution log.",
                id="eunice.W001",
            )
        )
    try:
        from tools.catalog import system_tools

        system_tools()
    except KeyError as exc:
        problems.append(Error(f"the system tool catalog is inconsistent: {exc}", id="eunice.E002"))
    return problems
