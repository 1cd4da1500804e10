"""ASGI entry point: HTTP through Django, websockets through Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eunice.settings")
django_http = get_asgi_application()  # sets Django up before the imports below

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from conversations.routing import websocket_urlpatterns  # noqa: E402
from eunice.origins import CsrfOriginValidator  # noqa: E402
from eunice.websocket_auth import WebsocketAuthMiddlewareStack  # noqa: E402
from mcpserver.endpoint import MCPEndpoint, MCPMount  # noqa: E402

# The embedded product serves its own static files (admin CSS, the chat page's
# scripts); a deployment behind a web server can turn this off.
http_app = ASGIStaticFilesHandler(django_http) if settings.EUNICE_SERVE_STATIC else django_http
# /mcp and /mcp/<bundle>/: the tenant's approved tools to outside MCP clients (docs/mcp-server.md).
mcp_endpoint = MCPEndpoint()

application = ProtocolTypeRouter(
    {
        "http": MCPMount(http_app, mcp_endpoint),
        # uvicorn's start and stop: the MCP endpoint's session manager (daphne sends none;
        # the endpoint then starts with its first request).
        "lifespan": mcp_endpoint.lifespan,
        # The Origin must match as HTTP's CSRF check would have it: scheme, host and port.
        "websocket": CsrfOriginValidator(WebsocketAuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# Import every view now (the URLconf imports them), not on the first page
# load: then they are part of the start-up heap that the collector is told
# to stop walking below, and the first visitor does not wait for the imports.
from django.urls import get_resolver  # noqa: E402

get_resolver().url_patterns  # noqa: B018 (the attribute imports the URLconf)

# The same for what the first turn would otherwise import or load while other
# answers stream: the system tools' handler modules (about half a second
# under the GIL), the model SDKs' first-request set-up and the price catalog.
from llm.roles import warm_up  # noqa: E402
from registry.handlers import import_system_handlers  # noqa: E402

import_system_handlers()
warm_up()

# The child processes killable tools run in (registry.killable), when one can run here.
from registry.killable import preload as preload_killable  # noqa: E402

preload_killable()

# Tool search's embedding models and its index, which the first search_tools call of
# the process would otherwise load and build (1.6 s for that user, under the GIL while
# other answers stream). EUNICE_PRELOAD_TOOL_SEARCH=0 leaves them to first use.
if settings.EUNICE_PRELOAD_TOOL_SEARCH:
    from registry.registry import get_registry  # noqa: E402
    from registry.search import load_models, warm_up_index  # noqa: E402

    if load_models():
        warm_up_index(get_registry())

# The custom-tool sandbox's pre-warmed zygote, when custom tools are on: the
# first call would otherwise wait for its interpreter and imports.
# EUNICE_PRELOAD_SANDBOX=0 leaves it to first use.
if settings.FEATURE_FLAGS["custom_tools_enabled"] and settings.EUNICE_PRELOAD_SANDBOX:
    from registry.sandbox.service import preload  # noqa: E402

    preload()

# Turns a killed server process left running are closed as interrupted now,
# not only when their conversation's next message comes (docs/agent-loop.md).
if settings.EUNICE_CLOSE_DEAD_TURNS_AT_START_UP:
    from conversations.turn_reservations import close_dead_turns_at_start_up  # noqa: E402

    close_dead_turns_at_start_up()

# News from the other server processes (definitions changed, cancels, answers): eunice/bus.py.
from eunice import bus  # noqa: E402

bus.start()

# Everything above is the start-up heap: stop the collector walking it.
from eunice.collector import tune_for_serving  # noqa: E402

tune_for_serving()
