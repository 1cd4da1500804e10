"""The process bus: news every server process must hear, pushed over Redis pub/sub.

Several server processes (and job workers) keep things in memory that another
process may change: the registry's copy of the tool definitions, the cancel
tokens of the turns they run. A process that changes one ``publish``es a
topic; every process runs that topic's handlers, the publisher at once and in
its own thread, the others from their listener thread within milliseconds.

Without ``REDIS_URL`` there is one process: ``publish`` only runs the local
handlers. Pub/sub is not a queue: a process whose connection to Redis is down
misses what is published meanwhile, so on every (re)subscription the
``on_reconnect`` callbacks run (the registry reloads its definitions; a
missed cancel is still seen at the turn's next step, from the database flag).

Redis pub/sub channels are shared by every database number of a server, so the
channel's name carries the number: deployments on ``/1`` and ``/2`` do not hear
each other.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Callable
from urllib.parse import urlsplit

from eunice.jsonlimits import loads_bounded

logger = logging.getLogger("eunice.bus")

Handler = Callable[[dict], None]

_origin = ("", 0)  # (this process's name on the bus, so it skips its own messages; its pid)
RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0)

_handlers: dict[str, list[Handler]] = {}
_on_reconnect: list[Callable[[], None]] = []
_on_commit: dict[str, Callable[[], None]] = {}  # one callback per topic, so a transaction publishes it once
_lock = threading.Lock()
_listener: Listener | None = None


def on(topic: str) -> Callable[[Handler], Handler]:
    """Decorator: run the function with the message's payload whenever ``topic`` is published."""

    def register(handler: Handler) -> Handler:
        with _lock:
            _handlers.setdefault(topic, []).append(handler)
        return handler

    return register


def on_reconnect(callback: Callable[[], None]) -> Callable[[], None]:
    """Decorator: run ``callback`` each time the listener (re)subscribes, when news may have been missed."""
    with _lock:
        _on_reconnect.append(callback)
    return callback


def publish(topic: str, *, here: bool = True, **payload: object) -> None:
    """Run ``topic``'s handlers here (unless ``here`` is False: the caller has done the
    work itself), then tell the other processes (when there is Redis).

    Never raises for Redis: with it unreachable the others fall back on what
    they poll (the registry's fingerprint, a turn's cancel flag), and a warning
    is logged."""
    if here:
        _deliver(topic, payload)
    url = _redis_url()
    if not url:
        return
    message = json.dumps({"topic": topic, "origin": origin(), "payload": payload})
    try:
        _publisher(url).publish(channel_name(url), message)
    except Exception as exc:  # noqa: BLE001 (redis-py raises several kinds; the poll covers a miss)
        logger.warning("could not publish %s on the process bus (%s)", topic, type(exc).__name__)


def publish_on_commit(topic: str) -> None:
    """Tell the other processes ``topic`` once the current transaction commits (at once
    outside one); several calls in one transaction publish once. The caller has done
    this process's part already (a cache forgotten)."""
    from django.db import transaction

    with _lock:
        tell = _on_commit.setdefault(topic, lambda: publish(topic, here=False))
    connection = transaction.get_connection()
    if not any(entry[1] is tell for entry in connection.run_on_commit):
        transaction.on_commit(tell)


def origin() -> str:
    """This process's name on the bus; drawn again in a forked child, which is another process."""
    global _origin
    if _origin[1] != os.getpid():
        _origin = (f"{os.getpid()}:{uuid.uuid4().hex[:12]}", os.getpid())
    return _origin[0]


def channel_name(url: str) -> str:
    """The pub/sub channel of the deployment at ``url``: named after its database number."""
    path = urlsplit(url).path.strip("/")
    return f"eunice:bus:{path or '0'}"


def start() -> Listener | None:
    """Start this process's listener thread (once per process: a forked child, whose copy
    of the parent's thread is not running, starts its own); None without Redis."""
    global _listener
    url = _redis_url()
    if not url:
        return None
    with _lock:
        if _listener is None or _listener.pid != os.getpid():
            _listener = Listener(url)
            _listener.start()
        return _listener


def _deliver(topic: str, payload: dict) -> None:
    with _lock:
        handlers = list(_handlers.get(topic, ()))
    for handler in handlers:
        try:
            handler(payload)
        except Exception:  # one broken handler must not keep the news from the others
            logger.exception("a handler of %s on the process bus failed", topic)


def _received(data: bytes | str) -> None:
    try:
        # Anyone who can reach Redis can publish: parsed with the deployment's size and depth limits.
        message = loads_bounded(data, what="a process-bus message")
        topic, sender, payload = message["topic"], message["origin"], message["payload"]
    except (ValueError, KeyError, TypeError):
        logger.warning("ignored an unreadable message on the process bus")
        return
    if sender != origin() and isinstance(payload, dict):
        _deliver(topic, payload)


def _redis_url() -> str:
    from django.conf import settings

    return getattr(settings, "REDIS_URL", "") or ""


_publishers: dict[str, object] = {}


def _publisher(url: str):  # noqa: ANN202 (redis.Redis, imported lazily)
    client = _publishers.get(url)
    if client is None:
        import redis

        client = _publishers.setdefault(
            url, redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2, socket_keepalive=True)
        )
    return client


class Listener(threading.Thread):
    """Subscribes to the bus and hands each message to its handlers; resubscribes after a failure."""

    def __init__(self, url: str) -> None:
        super().__init__(name="eunice-bus", daemon=True)
        self.url, self.pid = url, os.getpid()
        self.subscribed = threading.Event()  # set while subscribed: tests and start-up wait on it
        self._stopping = threading.Event()

    def run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                self._listen()
                failures = 0
            except Exception as exc:  # noqa: BLE001 (Redis down or restarted: subscribe again)
                self.subscribed.clear()
                if self._stopping.is_set():
                    return
                delay = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
                failures += 1
                logger.warning("process bus: lost Redis (%s); subscribing again in %g s", type(exc).__name__, delay)
                self._stopping.wait(delay)

    def _listen(self) -> None:
        import redis

        client = redis.Redis.from_url(self.url, socket_connect_timeout=5, socket_timeout=None, socket_keepalive=True)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            pubsub.subscribe(channel_name(self.url))
            while not self._stopping.is_set():
                message = pubsub.get_message(timeout=1.0)  # the timeout lets ``stop`` be seen
                if not self.subscribed.is_set():  # the confirmation has been read
                    self.subscribed.set()
                    for callback in list(_on_reconnect):
                        callback()
                if message is not None and message.get("type") == "message":
                    _received(message["data"])
        finally:
            pubsub.close()
            client.close()

    def stop(self, timeout: float = 5.0) -> None:
        """Unsubscribe and end the thread (within about a second)."""
        self._stopping.set()
        self.join(timeout)
