"""The chat page."""

from __future__ import annotations

from csp.constants import UNSAFE_INLINE
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.http import require_POST

from conversations import listing
from conversations.access import conversations_of, owned_conversation
from conversations.approvals import pending_cards
from conversations.models import Conversation, TurnRecord
from conversations.timeline import timeline
from conversations.turn_reservations import close_if_dead
from eunice import chart_script
from llm.roles import get_model_for_role
from registry.models import MCPServer
from registry.tenancy import tenant_of

# Vega-embed and its tooltips add <style> elements and style attributes, so the page
# that draws charts, and only it, allows inline styles (docs/deploy.md,
# "Content-Security-Policy"). It allows no eval: charts are drawn with Vega's
# expression interpreter (eunice/chart_script.py), and its scripts come from this site only.
CHAT_CSP = {"style-src": [UNSAFE_INLINE]}


@login_required
def chat(request: HttpRequest, conversation_id: str | None = None) -> HttpResponse:
    conversation = None
    if conversation_id is not None:
        conversation = owned_conversation(request.user, conversation_id)
        if conversation is None:
            raise Http404("No such conversation.")
    listed = conversations_of(request.user).by_activity()
    search = request.GET.get("q", "").replace("\x00", "").strip()[: listing.SEARCH_CHARS]
    if search:
        listed = listed.search(search)
    # Just deleted (the page came here from it): offer to undo.
    deleted = conversations_of(request.user, deleted=True).filter(pk=request.GET.get("deleted", "")).first()
    drawn = as_drawn(conversation) if conversation is not None else {"chunks": [], "approvals": []}
    response = render(
        request,
        "eunice/chat.html",
        {
            "conversation": conversation,
            "conversations": listed[:50],
            "search": search,
            "deleted": deleted,
            "timeline": drawn["chunks"],
            "approvals": drawn["approvals"],
            "chart_script": chart_script.url(),
            "chat_settings": {
                "world": static("vendor/world-atlas/countries-110m.json"),
                "tiles": settings.EUNICE_MAP_TILES,
                "tiles_attribution": settings.EUNICE_MAP_ATTRIBUTION,
            },
            "offline": get_model_for_role("chat").provider == "offline",
            "no_tenant": tenant_of(request.user) is None,
            # The per-user OAuth servers of the tenant: each user connects their own account here.
            "mcp_connections": MCPServer.objects.per_user_oauth(tenant_of(request.user) or "", request.user.pk),
        },
    )
    update = dict(CHAT_CSP)
    if settings.EUNICE_MAP_TILES:  # the map's tiles come from that server
        update["img-src"] = [tile_origin(settings.EUNICE_MAP_TILES)]
    response._csp_update = update  # type: ignore[attr-defined]  # what csp_update would set, per request
    return response


def tile_origin(template: str) -> str:
    """The origin of a tile URL template, for the page's ``img-src``: Leaflet's ``{s}``
    subdomain becomes a wildcard (``https://{s}.tile.example.org/…`` → ``https://*.tile.example.org``)."""
    scheme, _, rest = template.partition("://")
    host = rest.split("/", 1)[0].replace("{s}.", "*.")
    return f"{scheme}://{host}"


@login_required
def conversation_timeline(request: HttpRequest, conversation_id: str) -> JsonResponse:
    """The conversation as the page draws it (``timeline``), with the calls still waiting for
    a click, as the page itself holds them: for a page that (re)connected after drawing."""
    conversation = owned_conversation(request.user, conversation_id)
    if conversation is None:
        raise Http404("No such conversation.")
    drawn = as_drawn(conversation)
    running = conversation.turns.filter(status=TurnRecord.Status.RUNNING).exists()
    return JsonResponse({**drawn, "running": running})


def as_drawn(conversation: Conversation) -> dict[str, list[dict]]:
    """What the page draws of a conversation, on its first render and after a reconnect:
    the person's view of it (``timeline``) and the calls still waiting for a click. A
    turn whose process is gone is closed first, so it is not drawn running."""
    close_if_dead(conversation.pk)
    return {"chunks": timeline(conversation), "approvals": pending_cards(conversation)}


@login_required
@require_POST
def new_conversation(request: HttpRequest) -> HttpResponse:
    tenant = tenant_of(request.user)
    if tenant is None:
        return redirect("chat")
    mode = request.POST.get("mode", "chat")
    if mode not in (Conversation.Mode.CHAT, Conversation.Mode.AGENTIC):
        mode = Conversation.Mode.CHAT
    conversation = Conversation.objects.create(tenant_id=tenant, user=request.user, mode=mode)
    return redirect("chat-conversation", conversation.pk)
