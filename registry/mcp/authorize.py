"""Authorizing Eunice at an OAuth-protected MCP server, and taking it back: one action each.

Who may, judged here whoever calls (the admin, the chat page's views):

- a **tenant connection** (``authorization="tenant"``): staff authorize once, for every
  user of the tenant; staff revoke it;
- a **per-user connection** (``"user"``): each user authorizes for themselves and may
  revoke their own grant; staff may revoke any user's grant of their tenant.

Revoking forgets Eunice's copy of the grant and then asks the authorization server to
revoke it too (RFC 7009), where it has a revocation endpoint.

Authorizing talks to the network and waits for a person at the authorization server, so
it runs in a background thread: ``start_authorization`` returns the URL to send the
person to as soon as the SDK's flow produced it; Eunice's callback view hands the code
back (registry.mcp.oauth.BrowserFlow), and the flow then ends on its own.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import close_old_connections, transaction

from registry.mcp import MCPError
from registry.mcp.config import ServerConfig
from registry.mcp.connection import Connection
from registry.mcp.manager import get_manager
from registry.mcp.oauth import AUTHORIZE_WAIT, BrowserFlow, revoke_at_server
from registry.mcp.transports import transport_of
from registry.models import MCPAuditLog, MCPAuthorization, MCPOAuthGrant, MCPServer

logger = logging.getLogger("eunice.mcp")
URL_WAIT = 20.0  # how long the view waits for the authorization URL


def start_authorization(server: MCPServer, *, acting_user: Any, callback: str | None = None) -> str:
    """Begin authorizing ``server`` for ``acting_user`` (its tenant connection when the server
    is one and the user is staff). Returns the authorization server's URL to send them to,
    or "" when the grant Eunice holds still works and nobody needs to go anywhere.
    ``callback``: the absolute URL of Eunice's callback view as the person reaches it
    (default: on EUNICE_PUBLIC_URL).
    Raises PermissionDenied, ValidationError (a server without OAuth) or MCPError."""
    for_tenant = _owner_rule(server, acting_user)
    flow = BrowserFlow(server.pk, acting_user.pk, for_tenant, callback)
    config = dataclasses.replace(
        ServerConfig.from_model(server), oauth_user_id=None if for_tenant else acting_user.pk, oauth_flow=flow
    )
    outcome: dict[str, str] = {}
    worker = threading.Thread(
        target=_authorize, args=(config, server.pk, acting_user, for_tenant, outcome), daemon=True, name="mcp-oauth"
    )
    worker.start()
    deadline = time.monotonic() + URL_WAIT
    while not flow.ready.wait(0.1) and worker.is_alive() and time.monotonic() < deadline:
        pass
    if flow.ready.is_set():
        return flow.url
    if "error" in outcome:
        raise MCPError(outcome["error"])
    if worker.is_alive():
        raise MCPError(f"MCP server {server.name!r}: no authorization URL within {URL_WAIT:g} s")
    return ""


def _owner_rule(server: MCPServer, actor: Any) -> bool:
    """Whether the authorization is the tenant's (True) or the actor's own (False)."""
    if server.authorization == MCPAuthorization.NONE:
        raise ValidationError({"authorization": f"MCP server {server.name!r} does not use OAuth; set authorization"})
    if server.authorization == MCPAuthorization.TENANT:
        if not actor.is_staff:
            raise PermissionDenied("only staff may authorize a server's tenant connection")
        return True
    return False


def _authorize(config: ServerConfig, server_pk: int, actor: Any, for_tenant: bool, outcome: dict) -> None:
    """The background half: run the SDK's flow to its end, then connect the server."""
    manager = get_manager()
    try:
        connection = Connection(config, transport_of(config).check(config), on_tools_changed=_nothing, on_lost=_quiet)
        manager._run(connection.open(AUTHORIZE_WAIT), AUTHORIZE_WAIT + 15)
        manager._run(connection.close(), 15.0)
        server = MCPServer.objects.get(pk=server_pk)
        _audit("authorize", server, actor, {"owner": "tenant" if for_tenant else actor.get_username()})
        if for_tenant:
            manager.connect(ServerConfig.from_model(server))
        else:
            manager.forget_user(server_pk, actor.pk)
            manager.ensure_connected(server_pk)
    except (MCPError, TimeoutError, MCPServer.DoesNotExist) as exc:
        outcome["error"] = f"authorizing MCP server {config.name!r} failed: {exc}"
        logger.warning("%s", outcome["error"])
    except RuntimeError as exc:  # the manager's loop was stopped under it (the process is ending)
        outcome["error"] = f"authorizing MCP server {config.name!r} was cut short: {exc}"
        logger.info("%s", outcome["error"])
    finally:
        close_old_connections()


async def _nothing(_tools: list) -> None:
    """The authorizing connection lists tools only to prove the grant works."""


def _quiet(_reason: str) -> None:
    """The authorizing connection is closed on purpose."""


@transaction.atomic
def revoke(server: MCPServer, *, acting_user: Any, user: Any = None) -> int:
    """Forget the grants of ``server``'s tenant connection (``user`` None) or of ``user``.
    A user may revoke their own; staff the tenant's and any user's. Returns how many
    grants were deleted. Raises PermissionDenied."""
    own = user is not None and user.pk == acting_user.pk
    if not (own or acting_user.is_staff):
        raise PermissionDenied("only staff may revoke a tenant connection or another user's authorization")
    owner_id = user.pk if user is not None else None
    grants = list(MCPOAuthGrant.objects.owned_by(server.pk, owner_id))
    deleted, _ = MCPOAuthGrant.objects.owned_by(server.pk, owner_id).delete()
    _audit("revoke", server, acting_user, {"owner": user.get_username() if user is not None else "tenant"})
    transaction.on_commit(lambda: _revoke_at_servers(server, grants))
    manager = get_manager()
    transaction.on_commit(lambda: manager.forget_user(server.pk, owner_id) if owner_id else None)
    if owner_id is None and server.authorization == MCPAuthorization.TENANT:
        transaction.on_commit(lambda: manager.disconnect(server.pk))
    return deleted


def _revoke_at_servers(server: MCPServer, grants: list[MCPOAuthGrant]) -> None:
    """Tell each grant's authorization server, once Eunice has forgotten the grant."""
    config = ServerConfig.from_model(server)
    for grant in grants:
        refused = revoke_at_server(grant, config.oauth_client, allow_private=config.allow_private)
        if refused:
            logger.warning("MCP server %s: revoking at %s: %s", server.name, grant.issuer, refused)


def _audit(action: str, server: MCPServer, actor: Any, details: dict) -> None:
    MCPAuditLog.objects.create(
        action=f"oauth_{action}",
        server_name=server.name,
        tenant_id=server.tenant_id,
        actor=actor.get_username(),
        details=details,
    )
