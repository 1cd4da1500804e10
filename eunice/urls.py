from django.contrib import admin
from django.http import JsonResponse
from django.urls import include, path


def health(request):
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("registry.mcp.api_urls")),
    path("health/", health, name="health"),
    path("", include("conversations.catalog.urls")),
]
