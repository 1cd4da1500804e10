"""The Redis channel layer lets go of a socket the moment the socket closes.

A consumer waits on the layer for its whole life; when its socket closes,
Channels cancels that wait. With a socket read timeout on the layer's Redis
connections (redis-py 7.4 and 8.1 alike, Python 3.11), a cancel that lands while
a connection is being set up was sometimes lost: the wait went on, and since the
blocking pop comes back empty every 5 s and is retried, it went on for ever. The
server kept the dead consumer; in the test suite, a run hung. eunice/settings.py
gives the layer no read timeout; the first test fails if one comes back.
"""

import asyncio
import random

import pytest
from channels.layers import channel_layers
from django.conf import settings

pytestmark = pytest.mark.skipif(
    settings.CHANNEL_LAYERS["default"]["BACKEND"] != "channels_redis.core.RedisChannelLayer",
    reason="runs when REDIS_URL is configured",
)


def new_layer():
    """A layer built from the settings, with its own connection pool."""
    return channel_layers.make_backend("default")


@pytest.mark.asyncio
async def test_a_cancelled_wait_on_the_layer_ends_at_once_wherever_the_cancel_lands():
    pauses = random.Random(7)
    late = []
    for attempt in range(100):
        layer = new_layer()  # a new connection each time: its set-up is one place a cancel lands
        waiting = asyncio.ensure_future(layer.receive(await layer.new_channel()))
        await asyncio.sleep(pauses.random() * 0.004)  # anywhere in the layer's round trips to Redis
        waiting.cancel()
        done, _ = await asyncio.wait({waiting}, timeout=1)
        if not done or not waiting.cancelled():
            late.append(attempt)
        await layer.close_pools()

    assert late == [], f"{len(late)} of 100 waits outlived their cancel"


@pytest.mark.asyncio
async def test_a_consumer_idle_longer_than_the_blocking_pop_still_gets_its_message():
    layer = new_layer()
    channel = await layer.new_channel()
    waiting = asyncio.ensure_future(layer.receive(channel))
    await asyncio.sleep(layer.brpop_timeout + 1)  # redis-py 8's default read timeout would have ended the wait here
    await layer.send(channel, {"type": "chunk", "text": "late"})

    assert await asyncio.wait_for(waiting, 2) == {"type": "chunk", "text": "late"}
    await layer.close_pools()
