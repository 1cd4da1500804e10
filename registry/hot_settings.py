"""Settings read on every tool call, held as plain attributes.

Reading ``django.conf.settings`` costs about 0.4 µs (its lazy wrapper), and the
dispatch path read two settings on every call: a tenth of the call. These are
read once and again whenever a setting changes through Django's
``setting_changed`` signal (``override_settings``, pytest-django's ``settings``),
so a test that changes one is still obeyed. Assigning to ``settings`` directly
sends no signal: change these through ``override_settings``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed

#: Attribute here -> the Django setting it mirrors.
MIRRORED = {
    "registry_poll_seconds": "EUNICE_REGISTRY_POLL_SECONDS",
    "execution_log_enabled": "EXECUTION_LOG_ENABLED",
}


class HotSettings:
    __slots__ = tuple(MIRRORED)

    registry_poll_seconds: float
    execution_log_enabled: bool

    def load(self) -> None:
        for attribute, setting in MIRRORED.items():
            setattr(self, attribute, getattr(settings, setting))


hot = HotSettings()
hot.load()


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting in MIRRORED.values():
        hot.load()


setting_changed.connect(_reload, dispatch_uid="registry.hot_settings")
