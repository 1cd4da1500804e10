"""Settings for the test suite: the same as production, plus a throwaway key."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")

from eunice.settings import *  # noqa: E402,F403

# Tests assert on log rows right after a call; the batching writer has its own tests.
EXECUTION_LOG_FLUSH_SECONDS = 0.0
# The test process imports eunice.asgi for its websocket tests: it loads what a
# server preloads there and then, not on a thread racing the tests for the database
# (tests/test_preload.py starts the thread itself; servers a test starts use it).
EUNICE_PRELOAD_WHILE_SERVING = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# A file, not memory, so a django-q2 worker started by a test can see the data.
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}  # noqa: F405

# Worker threads close their connections after each call, so a test database
# can always be dropped at the end of the run.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405

# A test database is thrown away: on PostgreSQL its commits (thousands a run, and a
# TRUNCATE of every table after each transactional test) need not wait for the WAL to
# reach the disk. A crash of PostgreSQL itself could lose the last few; no test
# survives that anyway. The server processes tests start read these settings too.
if DATABASES["default"]["ENGINE"] == "eunice.db.postgresql":  # noqa: F405
    _options = DATABASES["default"]["OPTIONS"]  # noqa: F405
    _options["options"] = f"{_options.get('options', '')} -c synchronous_commit=off".strip()

# No test may reach a hosted model: whatever the developer's shell holds, the
# suite starts offline; tests point the provider at the scripted local server.
ANTHROPIC_API_KEY = ""
ANTHROPIC_BASE_URL = ""
EUNICE_DEFAULT_MODEL = None

# A server process a browser test starts may talk to the test's scripted model
# server, and only to one on this machine.
_scripted = os.environ.get("EUNICE_TEST_SCRIPTED_MODEL_URL", "")
if _scripted:
    if not _scripted.startswith("http://127.0.0.1:"):
        raise RuntimeError("EUNICE_TEST_SCRIPTED_MODEL_URL must be a loopback http URL")
    ANTHROPIC_API_KEY = "sk-ant-scripted-test"
    ANTHROPIC_BASE_URL = _scripted

# The suite's many requests from a handful of users must never meet a rate limit;
# the throttle tests set their own rates. The counters live in this process's
# memory even when REDIS_URL is set, so a test can clear them without touching
# the Redis the channel layer uses.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = dict.fromkeys(  # noqa: F405
    REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
    "1000000/min",  # noqa: F405
)

# Tests import the ASGI app before their database exists; a test that starts a
# server process of its own (tests/faults/) turns the start-up close back on.
EUNICE_CLOSE_DEAD_TURNS_AT_START_UP = env_bool("EUNICE_CLOSE_DEAD_TURNS_AT_START_UP", False)  # noqa: F405
