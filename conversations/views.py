"""The chat page."""

from __future__ import annotations

from csp.constants import UNSAFE_EVAL, UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from conversations import listing
from conversations.access import conversations_of, owned_conversation
from conversations.approvals import pending_cards
from conversations.models import ChatMessage, Conversation
from llm.roles import get_model_for_role
from registry.tenancy import tenant_of


# Vega compiles a chart's expressions with Function(); its eval-free interpreter
# (vega-interpreter) ships in no package installed here. Vega-embed and its
# tooltips add <style> elements and style attributes. So the page that draws
# charts, and only it, allows eval and inline styles (docs/deploy.md,
# "Content-Security-Policy"); its scripts still come from this site only.
@csp_update({"script-src": [UNSAFE_EVAL], "style-src": [UNSAFE_INLINE]})
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
    messages, approvals = [], []
    if conversation is not None:
        messages = ChatMessage.objects.filter(conversation=conversation).order_by("created_at", "id")
        approvals = pending_cards(conversation)  # still waiting for a click: shown again after a reload
    return render(
        request,
        "eunice/chat.html",
        {
            "conversation": conversation,
            "conversations": listed[:50],
            "search": search,
            "deleted": deleted,
            "messages": messages,
            "approvals": approvals,
            "offline": get_model_for_role("chat").provider == "offline",
            "no_tenant": tenant_of(request.user) is None,
        },
    )


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
