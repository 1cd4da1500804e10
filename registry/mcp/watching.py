"""Resource subscriptions of one connection: which resources are watched, and which of them
the server has said changed since they were last read.

At 2025-11-25 a watch is a ``resources/subscribe`` and each change a
``notifications/resources/updated``; at 2026-07-28 it is a ``subscriptions/listen`` stream
naming the resource, whose events say the same. A change is kept until the resource is
read again, so the model learns of it the next time it lists the server's resources
(``read_mcp_resource``). Watches belong to the session: a reconnect starts without them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("eunice.mcp")

MAX_WATCHED = 100  # per connection


class Watching:
    def __init__(self, server: str) -> None:
        self._server = server
        self.watched: set[str] = set()
        self.changed: set[str] = set()

    async def watch(self, session: Any, uri: str, start: Callable[[Any], asyncio.Task]) -> str:
        """Subscribe to ``uri``; what happened, in words. Raises the SDK's MCPError when the
        server refuses."""
        if uri in self.watched:
            return f"already watching {uri}"
        if len(self.watched) >= MAX_WATCHED:
            return f"not watching {uri}: {MAX_WATCHED} resources of this server are watched already"
        capabilities = session.server_capabilities
        resources = capabilities.resources if capabilities is not None else None
        if resources is None or not resources.subscribe:
            return f"not watching {uri}: MCP server {self._server!r} does not offer resource subscriptions"
        if _is_modern(session):
            await self._listen(session, uri, start)
        else:
            await _subscribe(session, uri)
        self.watched.add(uri)
        return f"watching {uri}: a change will be listed the next time you list the server's resources"

    def updated(self, uri: str) -> None:
        if uri in self.watched:
            self.changed.add(uri)

    def read(self, uri: str) -> None:
        self.changed.discard(uri)

    async def _listen(self, session: Any, uri: str, start: Callable[[Any], asyncio.Task]) -> None:
        from mcp.client.subscriptions import listen

        acknowledged: asyncio.Future = asyncio.get_running_loop().create_future()

        async def follow() -> None:
            try:
                async with listen(session, resource_subscriptions=[uri]) as subscription:
                    acknowledged.set_result(None)
                    async for _event in subscription:
                        self.updated(uri)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the subscriber learns of it below, or it is logged
                if not acknowledged.done():
                    acknowledged.set_exception(exc)
                else:
                    logger.info("MCP server %s: watch of %s ended (%s)", self._server, uri, type(exc).__name__)

        start(follow())
        await acknowledged


def _is_modern(session: Any) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return session.protocol_version in MODERN_PROTOCOL_VERSIONS


async def _subscribe(session: Any, uri: str) -> None:
    """resources/subscribe, the way a 2025-11-25 server is watched. The SDK warns that the
    method is gone from 2026-07-28; this is only called on a session of the older revision."""
    import warnings

    from mcp.shared.exceptions import MCPDeprecationWarning

    with warnings.catch_warnings():  # the warning is raised as the call is made, not awaited
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        request = session.subscribe_resource(uri)
    await request
