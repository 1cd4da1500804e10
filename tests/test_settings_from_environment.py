import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from eunice.env import database_from_url, env_bool, env_float, env_int, validate_redis_url

ROOT = Path(__file__).resolve().parent.parent


def test_a_postgres_url_becomes_a_psycopg_database():
    db = database_from_url("DATABASE_URL", "postgres://ann:s3cret@db.local:6543/eunice")
    assert db["ENGINE"] == "eunice.db.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "eunice",
        "ann",
        "s3cret",
        "db.local",
        "6543",
    )


def test_an_unsupported_scheme_is_refused_naming_the_variable_without_the_password():
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL") as info:
        database_from_url("DATABASE_URL", "mysql://ann:s3cret@db/x")
    assert "s3cret" not in str(info.value)
    assert "postgres://" in str(info.value)


def test_a_postgres_url_without_a_database_name_is_refused():
    with pytest.raises(ImproperlyConfigured, match="names no database"):
        database_from_url("DATABASE_URL", "postgres://db.local:5432/")


def test_a_sqlite_url_names_a_file():
    assert database_from_url("DATABASE_URL", "sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"


def test_a_malformed_redis_url_is_refused_naming_the_variable():
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL"):
        validate_redis_url("REDIS_URL", "127.0.0.1:6379")


def test_boolean_numbers_and_bounds_are_checked(monkeypatch):
    monkeypatch.setenv("FLAG", "perhaps")
    with pytest.raises(ImproperlyConfigured, match="FLAG='perhaps' is not a boolean"):
        env_bool("FLAG")
    monkeypatch.setenv("COUNT", "two")
    with pytest.raises(ImproperlyConfigured, match="COUNT='two' is not a whole number"):
        env_int("COUNT", 1)
    monkeypatch.setenv("COUNT", "0")
    with pytest.raises(ImproperlyConfigured, match="COUNT=0 must be at least 1"):
        env_int("COUNT", 1, minimum=1)
    monkeypatch.setenv("SECONDS", "-1")
    with pytest.raises(ImproperlyConfigured, match="SECONDS=-1.0 must be at least 0"):
        env_float("SECONDS", 1.0, minimum=0.0)


def settings_import(**env):
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL", "REDIS_URL"}}
    return subprocess.run(
        [sys.executable, "-c", "import eunice.settings"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_settings_refuse_to_load_without_a_secret_key_when_debug_is_off():
    result = settings_import(DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY is required when DEBUG is off" in result.stderr


def test_settings_name_a_bad_environment_variable():
    result = settings_import(SECRET_KEY="k", EUNICE_TOOL_TIMEOUT="soon")
    assert "EUNICE_TOOL_TIMEOUT='soon' is not a number" in result.stderr


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("EUNICE_DATASET_MAX_COLUMNS", "wide", "is not a whole number"),
        ("EUNICE_ARCHIVE_MAX_RATIO", "0", "must be at least 1"),
        ("EUNICE_JSON_MAX_DEPTH", "1", "must be at least 2"),
    ],
)
def test_an_input_limit_that_is_not_a_positive_number_stops_the_process(variable, value, said):
    result = settings_import(SECRET_KEY="k", **{variable: value})
    assert result.returncode != 0 and variable in result.stderr and said in result.stderr


def test_settings_load_with_only_a_secret_key():
    assert settings_import(SECRET_KEY="k").returncode == 0


CHANNEL_LAYER_ROUND_TRIP = """
import asyncio, importlib.metadata, os
os.environ["DJANGO_SETTINGS_MODULE"] = "eunice.settings"
import django
django.setup()
from channels.layers import get_channel_layer
lookups = []
version = importlib.metadata.version
importlib.metadata.version = lambda name: lookups.append(name) or version(name)

async def main():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("metadata-check", channel)
    await layer.group_send("metadata-check", {"type": "ping"})
    assert (await layer.receive(channel)) == {"type": "ping"}
    await layer.group_discard("metadata-check", channel)

asyncio.run(main())
print("lookups", len(lookups))
"""


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (the PostgreSQL + Redis run sets it)")
def test_redis_connections_do_not_search_package_metadata_each_time():
    clean = {k: v for k, v in os.environ.items() if k != "DEBUG"}
    result = subprocess.run(
        [sys.executable, "-c", CHANNEL_LAYER_ROUND_TRIP],
        cwd=ROOT,
        env={**clean, "SECRET_KEY": "k"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "lookups 0" in result.stdout


def settings_print(expression: str, **env) -> str:
    """The value of ``expression`` over eunice.settings, loaded in a fresh process with ``env``."""
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL", "REDIS_URL"}}
    result = subprocess.run(
        [sys.executable, "-c", f"from eunice import settings as s; print({expression})"],
        cwd=ROOT,
        env={**clean, "SECRET_KEY": "k", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_throttles_count_in_redis_when_redis_is_configured():
    assert settings_print(
        's.CACHES["default"]["BACKEND"], s.CACHES["default"].get("LOCATION")', REDIS_URL="redis://127.0.0.1:6379/3"
    ) == ("django.core.cache.backends.redis.RedisCache redis://127.0.0.1:6379/3")


def test_rates_and_lockout_come_from_the_environment():
    assert (
        settings_print(
            's.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME.total_seconds()',
            EUNICE_API_RATE="100/hour",
            EUNICE_TURN_RATE="5/min",
            EUNICE_LOGIN_FAILURE_LIMIT="3",
            EUNICE_LOCKOUT_MINUTES="2",
        )
        == "{'anon': '60/min', 'user': '100/hour', 'turn': '5/min', 'upload': '30/min'} 3 120.0"
    )


def test_a_malformed_rate_is_refused_naming_the_variable():
    result = settings_import(SECRET_KEY="k", EUNICE_TURN_RATE="lots")
    assert "EUNICE_TURN_RATE='lots' is not a rate" in result.stderr


# The production environment docs/deploy.md documents ("Production settings").
PRODUCTION = {
    "SECRET_KEY": "x7Jq-" + "k3Vw9pLz2RtYb8NcE4mHs6DfGa1QxUo5iWe0ZrTvBn" * 2,
    "DEBUG": "0",
    "ALLOWED_HOSTS": "eunice.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://eunice.example.com",
    "EUNICE_HSTS_SECONDS": "31536000",
    "EUNICE_HSTS_PRELOAD": "1",
    "EUNICE_SSL_REDIRECT": "1",
    "EUNICE_SECURE_COOKIES": "1",
    "EUNICE_BEHIND_PROXY": "1",
}


def test_check_deploy_passes_with_the_documented_production_environment(tmp_path):
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE"}}
    env = {**clean, **PRODUCTION, "EUNICE_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "eunice.settings"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_the_production_switches_reach_djangos_security_settings():
    assert (
        settings_print(
            "s.SECURE_HSTS_SECONDS, s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
            "s.SECURE_PROXY_SSL_HEADER",
            **{k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"},
        )
        == "31536000 True True True ('HTTP_X_FORWARDED_PROTO', 'https')"
    )
    assert (
        settings_print(
            "s.SECURE_HSTS_SECONDS, s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER"
        )
        == "0 False False None"
    )
