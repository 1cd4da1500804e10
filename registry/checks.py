"""System checks for settings the tool system depends on."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register


@register()
def check_tool_system_settings(app_configs=None, **kwargs) -> list:
    problems: list[CheckMessage] = []
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
        from registry.system import system_catalog

        system_catalog().entries()
    except KeyError as exc:
        problems.append(Error(f"the system tool catalog is inconsistent: {exc}", id="eunice.E002"))
    return problems


@register()
def check_sandbox(app_configs=None, **kwargs) -> list:
    """Custom tools on, but the sandbox's OS layer incomplete: they will be refused."""
    if not settings.FEATURE_FLAGS.get("custom_tools_enabled"):
        return []
    from registry.sandbox.service import missing_os_layers

    missing = missing_os_layers()
    if not missing:
        return []
    if settings.SANDBOX["ALLOW_WEAK"]:
        message = f"custom tools run WITHOUT {', '.join(missing)} (EUNICE_SANDBOX_ALLOW_WEAK=1)."
    else:
        message = (
            f"custom tools are enabled but will be refused: the sandbox's OS layer lacks "
            f"{', '.join(missing)}. Run as root on Linux with Landlock and libseccomp, or set "
            "EUNICE_SANDBOX_ALLOW_WEAK=1 to accept the weaker mode."
        )
    return [Warning(message, id="eunice.W002")]
