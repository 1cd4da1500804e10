"""The embedded default's channel layer: expiry sweeps at most once a second."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eunice.channel_layers import SweptInMemoryChannelLayer

ROOT = Path(__file__).resolve().parent.parent


class CountingLayer(SweptInMemoryChannelLayer):
    """Counts the stock layer's full sweeps."""

    sweeps = 0

    def _clean_expired(self):
        before = self._next_sweep
        super()._clean_expired()
        if self._next_sweep != before:
            self.sweeps += 1


@pytest.mark.asyncio
async def test_many_operations_within_a_second_sweep_the_layer_once():
    layer = CountingLayer()
    channels = [await layer.new_channel() for _ in range(50)]
    for channel in channels:
        await layer.group_add("room", channel)
    await layer.group_send("room", {"type": "ping"})
    for channel in channels:
        assert await layer.receive(channel) == {"type": "ping"}

    assert layer.sweeps == 1  # the stock layer sweeps on the group send and on each of the 50 receives


@pytest.mark.asyncio
async def test_an_expired_message_is_dropped_at_the_next_sweep(monkeypatch):
    layer = SweptInMemoryChannelLayer(expiry=0.01)
    monkeypatch.setattr(layer, "SWEEP_SECONDS", 0.05)
    await layer.send("dead.channel", {"type": "never read"})
    await layer.group_add("room", "dead.channel")
    await layer.group_send("elsewhere", {"type": "x"})  # sweeps (the first time), as receives do
    await asyncio.sleep(0.02)
    await layer.group_send("elsewhere", {"type": "x"})  # expired, but within the interval: still held
    assert "dead.channel" in layer.channels

    await asyncio.sleep(0.06)
    await layer.group_send("elsewhere", {"type": "x"})

    assert "dead.channel" not in layer.channels
    assert "dead.channel" not in layer.groups.get("room", {})  # and it left its groups


def test_the_embedded_default_uses_the_swept_layer():
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL"}}
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'eunice.settings'; django.setup();"
        "from channels.layers import get_channel_layer; print(type(get_channel_layer()).__name__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "SECRET_KEY": "k"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == "SweptInMemoryChannelLayer", result.stderr
