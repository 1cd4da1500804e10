"""URLs under /api/: every REST resource, the OpenAPI schema and its browsable UI (local assets)."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

import eunice.openapi  # noqa: F401 - registers the schema extensions
from conversations.api import ConversationViewSet
from registry.mcp.api import MCPServerViewSet

router = DefaultRouter()
router.register("mcp/servers", MCPServerViewSet, basename="mcp-server")
router.register("conversations", ConversationViewSet, basename="conversation")

urlpatterns = [
    path("", include(router.urls)),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("schema/ui/", SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="eunice/swagger_ui.html"), name="schema-ui"),
]
