"""An OAuth-protected MCP server and its authorization server, for the tests: the SDK's
server-side auth pieces (``create_auth_routes``, ``MCPServer`` with ``AuthSettings``) in
one process on two loopback ports, so the authorization server is on another origin.

    python oauth.py AS_PORT RS_PORT [--wrong-iss] [--expires-in SECONDS] [--deny-admin]

The authorization endpoint approves at once (no login page): it redirects straight back
with a code (and ``iss``: the issuer, or ``https://evil.example.com`` with --wrong-iss).
Tools: ``whoami`` (which token the call carried, by its serial number) and ``admin``,
which needs the ``mcp:admin`` scope: without it the server answers HTTP 403
``insufficient_scope`` (a step-up). ``GET AS/stats`` counts what the authorization
server did. With --deny-admin the authorization server never grants ``mcp:admin``
(a step-up that can never succeed). Prints "ready" on stderr when both listen.
"""

from __future__ import annotations

import argparse
import itertools
import json
import secrets
import sys
import threading
import time

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    ProviderTokenVerifier,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

SCOPES = ["mcp", "mcp:admin"]


class ApprovingProvider:
    """An in-memory authorization server that approves every request at once."""

    def __init__(self, issuer: str, iss: str, expires_in: int, deny_admin: bool = False) -> None:
        self.issuer, self.iss, self.expires_in, self.deny_admin = issuer, iss, expires_in, deny_admin
        self.clients: dict = {}
        self.codes: dict = {}
        self.access: dict = {}
        self.refresh: dict = {}
        self.serial = itertools.count(1)
        self.stats = {"authorizations": 0, "refreshes": 0, "revoked": 0, "revocation_requests": 0}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        client_info.scope = " ".join(SCOPES)  # every scope this server knows, for a later step-up
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params):
        self.stats["authorizations"] += 1
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=[scope for scope in params.scopes or ["mcp"] if not (self.deny_admin and scope == "mcp:admin")],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=self.iss)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.stats["refreshes"] += 1
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.stats["revoked"] += 1
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id, scopes, resource):
        serial = next(self.serial)
        access = f"access-{serial}-{secrets.token_urlsafe(8)}"
        refresh = f"refresh-{serial}-{secrets.token_urlsafe(8)}"
        expires = int(time.time()) + self.expires_in
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access, expires_in=self.expires_in, scope=" ".join(scopes), refresh_token=refresh
        )


def authorization_server(provider: ApprovingProvider) -> Starlette:
    routes = create_auth_routes(
        provider,
        issuer_url=AnyHttpUrl(provider.issuer),
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES),
        revocation_options=RevocationOptions(enabled=True),
    )

    async def stats(_request):
        return JSONResponse(provider.stats)

    app = Starlette(routes=[*routes, Route("/stats", stats)])

    async def counting(scope, receive, send):
        # Revocation requests as asked, whether the SDK's handler then accepts them or not: it
        # wants a client_secret field even from a public client, which RFC 7009 does not.
        if scope["type"] == "http" and scope["path"] == "/revoke":
            provider.stats["revocation_requests"] += 1
        await app(scope, receive, send)

    return counting


def resource_server(provider: ApprovingProvider, url: str) -> object:
    server = MCPServer(
        "protected",
        token_verifier=ProviderTokenVerifier(provider),
        auth=AuthSettings(issuer_url=provider.issuer, resource_server_url=url, required_scopes=["mcp"]),
    )

    @server.tool()
    def whoami() -> str:
        """Which token this call carried: its serial number."""
        token = get_access_token()
        return token.token.split("-")[1] if token else "nobody"

    @server.tool()
    def admin() -> str:
        """Needs the mcp:admin scope."""
        return "admin done"

    app = server.streamable_http_app()
    return StepUp(app, url)


class StepUp:
    """A tools/call of ``admin`` without the mcp:admin scope is refused with HTTP 403
    insufficient_scope, before the MCP layer sees it: the client must step up."""

    def __init__(self, app, url: str) -> None:
        self.app, self.url = app, url

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        if self._needs_admin(body) and "mcp:admin" not in self._scopes(scope):
            metadata = self.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
            challenge = f'Bearer error="insufficient_scope", scope="mcp mcp:admin", resource_metadata="{metadata}"'
            response = JSONResponse({"error": "insufficient_scope"}, status_code=403)
            response.headers["WWW-Authenticate"] = challenge
            return await response(scope, receive, send)
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    @staticmethod
    def _needs_admin(body: bytes) -> bool:
        try:
            message = json.loads(body or b"{}")
        except ValueError:
            return False
        return message.get("method") == "tools/call" and (message.get("params") or {}).get("name") == "admin"

    def _scopes(self, scope) -> list[str]:
        header = dict(scope["headers"]).get(b"authorization", b"").decode()
        token = PROVIDER.access.get(header.removeprefix("Bearer ").strip()) if PROVIDER else None
        return token.scopes if token else []


PROVIDER: ApprovingProvider | None = None


def main() -> None:
    global PROVIDER
    parser = argparse.ArgumentParser()
    parser.add_argument("as_port", type=int)
    parser.add_argument("rs_port", type=int)
    parser.add_argument("--wrong-iss", action="store_true")
    parser.add_argument("--expires-in", type=int, default=3600)
    parser.add_argument("--deny-admin", action="store_true")
    args = parser.parse_args()
    issuer = str(AnyHttpUrl(f"http://127.0.0.1:{args.as_port}"))  # as the metadata renders it
    PROVIDER = ApprovingProvider(
        issuer, "https://evil.example.com" if args.wrong_iss else issuer, args.expires_in, args.deny_admin
    )
    url = f"http://localhost:{args.rs_port}/mcp"  # another host name than the authorization server's
    servers = [
        uvicorn.Server(
            uvicorn.Config(authorization_server(PROVIDER), host="127.0.0.1", port=args.as_port, log_level="warning")
        ),
        uvicorn.Server(
            uvicorn.Config(resource_server(PROVIDER, url), host="127.0.0.1", port=args.rs_port, log_level="warning")
        ),
    ]
    threads = [threading.Thread(target=server.run, daemon=True) for server in servers]
    for thread in threads:
        thread.start()
    while not all(server.started for server in servers):
        time.sleep(0.05)
    print("ready", file=sys.stderr, flush=True)
    threads[0].join()


if __name__ == "__main__":
    main()
