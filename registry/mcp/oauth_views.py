"""Eunice's side of OAuth with MCP servers: its client metadata document, the page that
starts an authorization (the "Connect" button), the callback, and revoking.

Every view but the metadata document needs a signed-in user of the server's tenant; the
rules of who may authorize or revoke what are registry.mcp.authorize's.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from registry.mcp import MCPError, authorize
from registry.mcp.oauth import POLL, client_metadata_document
from registry.models import MCPAuthorization, MCPOAuthGrant, MCPOAuthRequest, MCPServer
from registry.tenancy import in_scope

CALLBACK_WAIT = 15.0  # how long the callback waits for the flow to turn the code into a grant


@require_GET
def client_metadata(request: HttpRequest) -> JsonResponse:
    """Eunice's Client ID Metadata Document: an authorization server fetches it, signed in or not."""
    response = JsonResponse(client_metadata_document())
    response["Cache-Control"] = "public, max-age=3600"
    return response


def _server(request: HttpRequest, server_id: int) -> MCPServer:
    server = in_scope(MCPServer.objects.exclude(authorization=MCPAuthorization.NONE), request.user).filter(pk=server_id)
    found = server.first()
    if found is None:
        raise Http404("no such MCP server with OAuth")
    return found


def _page(request: HttpRequest, server: MCPServer, status: int = 200, **extra: object) -> HttpResponse:
    for_tenant = server.authorization == MCPAuthorization.TENANT
    owner = None if for_tenant else request.user.pk
    back = reverse("admin:registry_mcpserver_change", args=[server.pk]) if for_tenant else reverse("chat")
    context = {
        "server": server,
        "for_tenant": for_tenant,
        "authorized": MCPOAuthGrant.objects.owned_by(server.pk, owner).exists(),
        "back": back,
        **extra,
    }
    return render(request, "mcp/oauth.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def connect(request: HttpRequest, server_id: int) -> HttpResponse:
    """GET: the page with the Connect button. POST: start authorizing and send the person on
    to the authorization server (or say it is done when the grant held still works)."""
    server = _server(request, server_id)
    if request.method == "GET":
        return _page(request, server)
    try:
        # On EUNICE_PUBLIC_URL when set (what the client metadata document names), else as reached.
        callback_url = None if settings.EUNICE_PUBLIC_URL else request.build_absolute_uri(reverse("mcp-oauth-callback"))
        url = authorize.start_authorization(server, acting_user=request.user, callback=callback_url)
    except PermissionDenied as exc:
        return _page(request, server, status=403, error=str(exc))
    except (ValidationError, MCPError) as exc:
        return _page(request, server, status=400, error=_words(exc))
    if not url:
        return _page(request, server, done="Eunice is authorized at this server.")
    # A page that goes on to the authorization server, not a redirect: the form's own
    # response may not leave Eunice's origin (Content-Security-Policy form-action 'self').
    return _page(request, server, continue_url=url, continue_host=urlsplit(url).netloc)


@login_required
@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    """Where the authorization server sends the person back: the code goes to the flow that
    waits for it (in whichever process), if the authorization was started by this user."""
    state = request.GET.get("state", "")
    pending = MCPOAuthRequest.objects.waiting(state).select_related("server").first() if state else None
    if pending is None or pending.user_id != request.user.pk:
        return HttpResponse(
            "This authorization was not started by you, or it has expired: start it again from Connect.",
            status=400,
            content_type="text/plain",
        )
    pending.code = request.GET.get("code", "")[:4000]
    pending.iss = request.GET.get("iss", "")[:2000]
    pending.error = (request.GET.get("error_description") or request.GET.get("error", ""))[:500]
    pending.answered = True
    pending.save(update_fields=["code", "iss", "error", "answered"])
    server = pending.server
    deadline = time.monotonic() + CALLBACK_WAIT
    while MCPOAuthRequest.objects.filter(pk=pending.pk).exists() and time.monotonic() < deadline:
        time.sleep(POLL)
    owner = None if pending.for_tenant else request.user.pk
    if pending.error:
        return _page(request, server, status=400, error=f"The authorization server refused: {pending.error}")
    if not _granted_since(server.pk, owner, pending.created_at):
        return _page(request, server, status=502, error="The authorization did not complete; try Connect again.")
    return _page(request, server, done="Eunice is authorized at this server.")


def _granted_since(server_id: int, owner: int | None, since: object) -> bool:
    deadline = time.monotonic() + CALLBACK_WAIT
    while time.monotonic() < deadline:
        if MCPOAuthGrant.objects.owned_by(server_id, owner).filter(updated_at__gte=since).exclude(tokens="").exists():
            return True
        time.sleep(POLL)
    return False


@login_required
@require_POST
def revoke(request: HttpRequest, server_id: int) -> HttpResponse:
    """Forget the grant: the tenant's for staff at a tenant connection, else the user's own."""
    server = _server(request, server_id)
    user = None if server.authorization == MCPAuthorization.TENANT else request.user
    try:
        authorize.revoke(server, acting_user=request.user, user=user)
    except PermissionDenied as exc:
        return _page(request, server, status=403, error=str(exc))
    return _page(request, server, done="Eunice's authorization at this server is revoked.")


def _words(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)
