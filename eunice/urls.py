from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponseRedirect, JsonResponse
from django.templatetags.static import static
from django.urls import include, path
from django.views import defaults
from oauth2_provider import urls as oauth_urls

from conversations import staff_views as telemetry_views
from conversations import views as chat_views
from eunice import chart_script
from eunice.health import health
from mcpserver.approval_page import approval_page
from registry import staff_views
from registry.mcp import oauth_views


def not_found(request, exception):  # noqa: ANN001, ANN201
    """A URL no route matches: under /api/ and /files/ the API's JSON error, as every API 404 is."""
    if request.path.startswith(("/api/", "/files/")):
        return JsonResponse({"detail": "no such resource"}, status=404)
    return defaults.page_not_found(request, exception)


handler404 = not_found


def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """Pages that name no icon (the admin's, the API's) get ours, not a 404 in the console."""
    return HttpResponseRedirect(static("eunice/favicon.svg"))


# /.well-known/... at the root (RFC 8414, RFC 9728); authorize, token and registration under /o/.
OAUTH_URLS = [
    *oauth_urls.metadata_urlpatterns,
    path("o/", include(oauth_urls.base_urlpatterns + oauth_urls.dcr_urlpatterns)),
]

urlpatterns = [
    path("", chat_views.chat, name="chat"),
    path("c/new/", chat_views.new_conversation, name="chat-new"),
    path("c/<str:conversation_id>/", chat_views.chat, name="chat-conversation"),
    path("c/<str:conversation_id>/timeline/", chat_views.conversation_timeline, name="chat-timeline"),
    path("assets/charts-<str:tag>.js", chart_script.serve, name="chart-script"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    path("playground/", staff_views.playground, name="playground"),
    path("playground/<str:name>/", staff_views.playground_tool, name="playground-tool"),
    path("telemetry/", telemetry_views.telemetry, name="telemetry"),
    path(
        "telemetry/conversations/<str:conversation_id>/",
        telemetry_views.telemetry_conversation,
        name="telemetry-conversation",
    ),
    path("mcp-oauth/client-metadata.json", oauth_views.client_metadata, name="mcp-oauth-client-metadata"),
    path("mcp-oauth/callback/", oauth_views.callback, name="mcp-oauth-callback"),
    path("mcp-oauth/<int:server_id>/connect/", oauth_views.connect, name="mcp-oauth-connect"),
    path("mcp-oauth/<int:server_id>/revoke/", oauth_views.revoke, name="mcp-oauth-revoke"),
    # A call waiting for a person's approval (the MCP endpoint sends them here): docs/mcp-server.md.
    path("approvals/<uuid:approval_id>/", approval_page, name="approval-page"),
    path("admin/", admin.site.urls),
    # The MCP endpoint's OAuth authorization server and both metadata documents (docs/mcp-server.md).
    path("", include((OAUTH_URLS, "oauth2_provider"))),
    path("api/", include("eunice.api_urls")),
    path("health/", health, name="health"),
    path("favicon.ico", favicon),
    path("", include("conversations.catalog.urls")),
]
