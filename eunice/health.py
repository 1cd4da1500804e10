"""/health/: each dependency the server needs, with its status and latency.

Safe to expose to a load balancer: the answer names dependencies and says
ok/down with a one-word reason, never a URL, host, password, version or
exception text (those go to the server log). Every probe is bounded (one
second per network call), so the endpoint answers even when Redis is a black
hole. The answer is 503 when a required dependency is down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import JsonResponse

logger = logging.getLogger("eunice.health")

PROBE_SECONDS = 1.0
_redis_clients: dict[str, Any] = {}


@dataclass(frozen=True)
class Dependency:
    name: str
    required: bool
    probe: Callable[[], None]  # returns when the dependency answers, raises when it does not


def _redis_ping(url: str) -> None:
    """PING ``url`` with a client of its own, bounded by PROBE_SECONDS (its pool reconnects by itself)."""
    import redis

    client = _redis_clients.get(url)
    if client is None:
        client = _redis_clients[url] = redis.Redis.from_url(
            url, socket_timeout=PROBE_SECONDS, socket_connect_timeout=PROBE_SECONDS
        )
    client.ping()


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _channel_layer() -> None:
    config: dict[str, Any] = settings.CHANNEL_LAYERS["default"]
    if config["BACKEND"].startswith("channels_redis."):
        for host in config["CONFIG"]["hosts"]:
            _redis_ping(host["address"] if isinstance(host, dict) else host)
    # The in-memory layer lives in this process: up while the process is.


def _cache() -> None:
    config: dict[str, Any] = settings.CACHES["default"]
    if config["BACKEND"].endswith("RedisCache"):
        _redis_ping(config["LOCATION"])


def _job_broker() -> None:
    if "redis" in settings.Q_CLUSTER:
        _redis_ping(settings.Q_CLUSTER["redis"])
    else:  # the ORM broker is the database
        _database()


DEPENDENCIES = (
    Dependency("database", True, _database),
    # Websockets (the chat page) cannot open without the channel layer.
    Dependency("channel_layer", True, _channel_layer),
    # The REST throttles' counters.
    Dependency("cache", True, _cache),
    # Background jobs wait in the broker; chat goes on without it.
    Dependency("job_broker", False, _job_broker),
)


def _reason(exc: BaseException) -> str:
    import redis

    if isinstance(exc, (TimeoutError, redis.TimeoutError)):
        return "timeout"
    if isinstance(exc, (OSError, redis.ConnectionError)):
        return "unreachable"
    return "error"


def check(dependency: Dependency) -> dict:
    started = time.perf_counter()
    try:
        dependency.probe()
    except Exception as exc:  # noqa: BLE001 (the probe's boundary: any failure is "down", with a one-word reason)
        reason = _reason(exc)
        logger.warning("health: %s is down (%s: %s)", dependency.name, type(exc).__name__, exc)
        result = {"status": "down", "reason": reason}
    else:
        result = {"status": "ok"}
    return {**result, "required": dependency.required, "latency_ms": round((time.perf_counter() - started) * 1000, 1)}


def report() -> tuple[int, dict]:
    """(HTTP status, body): 503 when a required dependency is down, "degraded" when an optional one is.

    ``tool_threads`` is this process's tool workers (registry.workers): ``lost``
    counts threads written off because their handler hung, ``hung`` those whose
    handler still runs. ``preload`` is "running" while the process still loads
    what its first turns would otherwise load (eunice/preload.py): it serves
    meanwhile, so it does not make the status worse.
    """
    from eunice import preload
    from registry.registry import get_registry

    checks = {dependency.name: check(dependency) for dependency in DEPENDENCIES}
    down = [name for name, result in checks.items() if result["status"] == "down"]
    required_down = [name for name in down if checks[name]["required"]]
    status = "down" if required_down else "degraded" if down else "ok"
    body = {"status": status, "down": down, "checks": checks, "tool_threads": get_registry().workers().stats()}
    body["preload"] = "running" if preload.running() else "done"
    return (503 if required_down else 200), body


def unavailable_message(down: list[str]) -> str:
    """What the chat page shows while ``down`` (dependency names) are out."""
    names = ", ".join(name.replace("_", " ") for name in down)
    return (
        f"Live chat is unavailable: the server cannot reach its {names} (Redis). "
        "Your conversation is safe; reload the page once it is back."
    )


def health(request) -> JsonResponse:  # noqa: ANN001
    status, body = report()
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response
