"""URLs under /api/: every REST resource, the OpenAPI schema and its browsable UI (local assets)."""

from django.conf import settings
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.routers import DefaultRouter

import eunice.openapi  # noqa: F401 - registers the schema extensions
from conversations.api import ConversationViewSet
from conversations.approvals_api import PendingApprovalViewSet
from registry.mcp.api import MCPServerViewSet
from registry.mcp.people_api import MCPPromptViewSet, MCPResourceViewSet


class SchemaAccess(BasePermission):
    """The schema and its UI: for signed-in users, or anyone when EUNICE_OPENAPI_PUBLIC is on
    (read on each request, so the setting can change without re-importing the URLconf)."""

    def has_permission(self, request: Request, view: object) -> bool:
        return settings.EUNICE_OPENAPI_PUBLIC or bool(request.user and request.user.is_authenticated)


router = DefaultRouter()
router.register("mcp/servers", MCPServerViewSet, basename="mcp-server")
router.register("mcp/prompts", MCPPromptViewSet, basename="mcp-prompt")
router.register("mcp/resources", MCPResourceViewSet, basename="mcp-resource")
router.register("conversations", ConversationViewSet, basename="conversation")
router.register("approvals", PendingApprovalViewSet, basename="approval")

urlpatterns = [
    path("", include(router.urls)),
    path("schema/", SpectacularAPIView.as_view(permission_classes=[SchemaAccess]), name="schema"),
    path(
        "schema/ui/",
        SpectacularSwaggerSplitView.as_view(
            url_name="schema", template_name="eunice/swagger_ui.html", permission_classes=[SchemaAccess]
        ),
        name="schema-ui",
    ),
]
