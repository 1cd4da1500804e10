"""REST API for MCP servers (/api/mcp/servers/): CRUD, connect/disconnect/refresh, tools.

Every query is scoped to the caller's tenant (registry.tenancy); secrets
in ``env`` and ``headers`` are write-only: reads show only their keys.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied as APIPermissionDenied
from rest_framework.exceptions import ValidationError as APIValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from eunice.serializers import StrictModelSerializer
from registry.mcp import MCPError, services
from registry.mcp.inventory import tool_state
from registry.mcp.naming import definition_hash
from registry.tenancy import tenant_of
from registry.models import MCPServer, ToolDefinition


class MCPServerSerializer(StrictModelSerializer):
    # Lists of strings, said so in the schema: a JSONField takes "a b" and splits it into characters.
    args = serializers.ListField(child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False,
                                 help_text='The command\'s arguments, one string each: ["-m", "server"].')
    idempotent_tools = serializers.ListField(child=serializers.CharField(min_length=1), required=False,
                                             help_text="Server-side names of tools safe to retry.")
    env = serializers.DictField(child=serializers.CharField(min_length=1), write_only=True, required=False)
    headers = serializers.DictField(child=serializers.CharField(min_length=1), write_only=True, required=False)
    env_keys = serializers.SerializerMethodField()
    header_keys = serializers.SerializerMethodField()
    tool_count = serializers.SerializerMethodField()

    class Meta:
        model = MCPServer
        fields = (
            "id", "name", "tenant_id", "transport", "command", "args", "env", "env_keys", "url",
            "headers", "header_keys", "allow_private_network", "enabled", "status", "last_error",
            "connected_at", "approval_policy", "call_timeout_seconds", "idempotent_tools",
            "tool_count", "created_at", "updated_at",
        )
        read_only_fields = ("tenant_id", "status", "last_error", "connected_at", "created_at", "updated_at")

    def get_env_keys(self, server: MCPServer) -> list[str]:
        return sorted(server.env or {})

    def get_header_keys(self, server: MCPServer) -> list[str]:
        return sorted(server.headers or {})

    def get_tool_count(self, server: MCPServer) -> int:
        if hasattr(server, "tools_approved"):  # counted with the list (MCPServerQuerySet.with_tool_counts)
            return server.tools_approved + server.tools_held
        return ToolDefinition.objects.live().filter(created_by=server.created_by_tag).count()


class MCPToolSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    state = serializers.CharField(help_text="active, quarantined, pending, flagged or unsupported")
    reason = serializers.CharField()
    annotations = serializers.DictField(help_text="the server's hints: readOnlyHint, destructiveHint, ...")
    definition_hash = serializers.CharField(help_text="SHA-256 of the whole tools/list entry an approval binds to")


class MCPServerViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
    mixins.UpdateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet,
):
    serializer_class = MCPServerSerializer
    queryset = MCPServer.objects.none()

    def get_queryset(self):  # noqa: ANN201
        tenant = tenant_of(self.request.user)
        return MCPServer.objects.for_tenant(tenant).with_tool_counts() if tenant else MCPServer.objects.none()

    def perform_create(self, serializer: MCPServerSerializer) -> None:
        tenant = tenant_of(self.request.user)
        if tenant is None:
            raise APIPermissionDenied("your account belongs to no tenant")
        data = dict(serializer.validated_data)
        name = data.pop("name")
        with _as_api_errors():
            serializer.instance = services.create_server(
                acting_user=self.request.user, tenant_id=tenant, name=name, **data
            )

    def perform_update(self, serializer: MCPServerSerializer) -> None:
        data = dict(serializer.validated_data)
        if data.pop("name", serializer.instance.name) != serializer.instance.name:
            raise APIValidationError({"name": "a server cannot be renamed; its tool names depend on it"})
        with _as_api_errors():
            services.update_server(serializer.instance, acting_user=self.request.user, **data)

    def perform_destroy(self, instance: MCPServer) -> None:
        with _as_api_errors():
            services.delete_server(instance, acting_user=self.request.user)

    @extend_schema(request=None, responses={200: dict})
    @action(detail=True, methods=["post"])
    def connect(self, request: Request, pk: str | None = None) -> Response:
        with _as_api_errors():
            return Response(services.connect_server(self.get_object(), acting_user=request.user))

    @extend_schema(request=None, responses={200: dict})
    @action(detail=True, methods=["post"])
    def disconnect(self, request: Request, pk: str | None = None) -> Response:
        with _as_api_errors():
            retired = services.disconnect_server(self.get_object(), acting_user=request.user)
        return Response({"retired": retired})

    @extend_schema(request=None, responses={200: dict})
    @action(detail=True, methods=["post"])
    def refresh(self, request: Request, pk: str | None = None) -> Response:
        with _as_api_errors():
            return Response(services.refresh_server(self.get_object(), acting_user=request.user))

    @extend_schema(responses={200: MCPToolSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def tools(self, request: Request, pk: str | None = None) -> Response:
        server = self.get_object()
        rows = ToolDefinition.objects.live().filter(created_by=server.created_by_tag).order_by("name")
        data = [
            {"name": r.name, "description": r.description, "state": tool_state(r), "reason": r.status_message,
             "annotations": _remote(r).get("annotations") or {}, "definition_hash": definition_hash(_remote(r))}
            for r in rows
        ]
        return Response(MCPToolSerializer(data, many=True).data)


def _remote(row: ToolDefinition) -> dict:
    return (row.test_results or {}).get("remote") or {}


class _as_api_errors:
    """Service exceptions → DRF responses (403, 400, and 502 for a server that failed)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, tb) -> bool:  # noqa: ANN001
        if exc is None:
            return False
        if isinstance(exc, PermissionDenied):
            raise APIPermissionDenied(str(exc)) from None
        if isinstance(exc, ValidationError):
            raise APIValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages) from None
        if isinstance(exc, MCPError):
            raise _BadGateway(str(exc)) from None
        return False


class _BadGateway(APIPermissionDenied):
    status_code = status.HTTP_502_BAD_GATEWAY
    default_code = "mcp_server_failed"
