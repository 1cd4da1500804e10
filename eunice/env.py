"""Small typed readers for settings that come from the environment.

Every reader fails loudly with ImproperlyConfigured naming the variable, the
rule it broke and what a valid value looks like.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off.")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_caps(name: str, *, minimum: int) -> dict[str, int]:
    """``tool=number,tool=number`` as {tool: number}; raises ImproperlyConfigured for an
    item without ``=``, a number that is not an integer, or one below ``minimum``."""
    caps: dict[str, int] = {}
    for item in env_list(name, []):
        tool, equals, number = item.partition("=")
        if not equals or not tool.strip() or not number.strip().isdigit() or int(number) < minimum:
            raise ImproperlyConfigured(f"{name}: {item!r} is not tool=tokens with tokens >= {minimum}")
        caps[tool.strip()] = int(number)
    return caps


def database_from_url(name: str, url: str) -> dict:
    """Django DATABASES entry for a postgres:// or sqlite:/// URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in {"postgres", "postgresql", "pgsql"}:
        db_name = unquote(parts.path.lstrip("/"))
        if not db_name:
            raise ImproperlyConfigured(
                f"{name}={_redact(url)!r} names no database; expected postgres://USER[:PASSWORD]@HOST[:PORT]/DBNAME."
            )
        options = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        return {
            # Django's backend, skipping the health check for a connection that has
            # just worked (eunice/db/postgresql/base.py).
            "ENGINE": "eunice.db.postgresql",
            "NAME": db_name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": options,
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    if scheme == "sqlite":
        # sqlite:///abs/path and sqlite:////abs/path both name /abs/path.
        path = "/" + unquote(parts.netloc + parts.path).lstrip("/")
        if path == "/":
            raise ImproperlyConfigured(f"{name}={url!r} names no file; expected sqlite:///absolute/path.sqlite3.")
        return _sqlite(path)
    raise ImproperlyConfigured(
        f"{name}={_redact(url)!r} has an unsupported scheme {scheme!r}; "
        "use postgres://… or sqlite:///…, or leave it unset for the embedded SQLite file."
    )


def _sqlite(path: str) -> dict:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        # Keep each worker thread's connection for a minute rather than opening
        # one (and running the PRAGMAs) for every piece of database work.
        "CONN_MAX_AGE": 60,
        "OPTIONS": {
            # WAL lets the execution-log writer thread and request threads write
            # without "database is locked"; IMMEDIATE avoids upgrade deadlocks.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        },
    }


def sqlite_database(path: str) -> dict:
    return _sqlite(path)


def validate_redis_url(name: str, url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in {"redis", "rediss", "unix"} or (parts.scheme != "unix" and not parts.hostname):
        raise ImproperlyConfigured(f"{name}={_redact(url)!r} is not a Redis URL; expected redis://HOST:PORT/DB.")
    return url


def redis_driver_info():
    """redis-py's client identity, its version read once here rather than per connection."""
    import redis
    from redis.driver_info import DriverInfo

    return DriverInfo(name="redis-py", lib_version=redis.__version__)


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return parts._replace(netloc=netloc).geturl()
    return url


def env_http_url(name: str) -> str:
    """An http(s) base URL, or "" when unset. Raises ImproperlyConfigured otherwise."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return ""
    parts = urlsplit(raw)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ImproperlyConfigured(
            f"{name}={_redact(raw)!r} is not an http(s) URL; expected e.g. http://127.0.0.1:8765."
        )
    return raw.rstrip("/")


def env_model_ref(name: str, providers: tuple[str, ...]) -> tuple[str, str] | None:
    """``PROVIDER/MODEL`` (or just ``offline``) as ``(provider, model)``; None when unset.

    Raises ImproperlyConfigured for an unknown provider or a provider without a model.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    provider, _, model = raw.partition("/")
    provider, model = provider.strip().lower(), model.strip()
    if provider not in providers:
        raise ImproperlyConfigured(
            f"{name}={raw!r} names an unknown provider {provider!r}; "
            f"use one of {', '.join(providers)} (e.g. anthropic/claude-sonnet-4-5, or offline)."
        )
    if provider == "offline":
        return provider, model or "offline"
    if not model:
        raise ImproperlyConfigured(f"{name}={raw!r} names no model; expected {provider}/MODEL.")
    return provider, model


_RATE_UNITS = {"s", "sec", "second", "m", "min", "minute", "h", "hour", "d", "day"}


def env_rate(name: str, default: str) -> str:
    """A request rate such as ``600/min`` (DRF's throttle format: a count per s, min, hour or day).

    Raises ImproperlyConfigured naming the variable when the count is not a whole
    number of at least 1 or the period is not one of those.
    """
    raw = os.environ.get(name, "").strip() or default
    count, _, unit = raw.partition("/")
    if not count.isdigit() or int(count) < 1 or unit not in _RATE_UNITS:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a rate; use a count per period, e.g. 600/min (periods: s, min, hour, day)."
        )
    return raw


def env_tile_template(name: str) -> str:
    """A map tile server's URL template (``https://…/{z}/{x}/{y}.png``), or "" when unset."""
    value = os.environ.get(name, "").strip()
    if value and not (
        value.startswith(("https://", "http://"))
        and all(part in value for part in ("{z}", "{x}", "{y}"))
        and not any(c.isspace() or c in "\"'<>`" for c in value)
        and len(value) <= 500
    ):
        raise ImproperlyConfigured(
            f"{name}={value[:200]!r} must be an http(s) URL template with {{z}}, {{x}} and {{y}} "
            "(at most 500 characters, no quotes or spaces), e.g. https://tile.openstreetmap.org/{z}/{x}/{y}.png"
        )
    return value
