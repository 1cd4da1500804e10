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

# Turns a killed server process left running are closed as interrupted now,
# not only when their conversation's next message comes (docs/agent-loop.md).
if settings.EUNICE_CLOSE_DEAD_TURNS_AT_START_UP:
    from conversations.turn_reservations import close_dead_turns_at_start_up  # noqa: E402

    close_dead_turns_at_start_up()

# News from the other server processes (definitions changed, cancels, answers): eunice/bus.py.
from eunice import bus  # noqa: E402

bus.start()

# What the first turns and searches would otherwise load while other answers
# stream (the system tools' handler modules, the model SDK's first-request
# set-up, tool search's encoders and index, the sandbox's zygote) loads on a
# thread of its own while the server already answers; a request that needs
# one of them waits for it (eunice/preload.py). The start-up heap is frozen
# for the collector once they are in. EUNICE_PRELOAD_WHILE_SERVING=0: all of
# it before serving, as before.
from eunice import preload  # noqa: E402

if settings.EUNICE_PRELOAD_WHILE_SERVING:
    preload.start()
else:
    preload.run()
