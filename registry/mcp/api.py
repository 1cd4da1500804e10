"""REST API for MCP servers (/api/mcp/servers/): CRUD, connect/disconnect/refresh, tools.

Every query is scoped to the caller's tenant (registry.tenancy); secrets
in ``env`` and ``headers`` are write-only: reads show only their keys.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied as APIPermissionDenied
from rest_framework.exceptions import ValidationError as APIValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from eunice.openapi import NON_BLANK_TEXT, StrictSerializerScheme
from eunice.serializers import StrictModelSerializer
from registry.mcp import MCPError, services
from registry.mcp.inventory import tool_state
from registry.mcp.metadata import icons_of, title_of
from registry.mcp.naming import definition_hash
from registry.mcp.urls import HTTP_URL_PATTERN
from registry.models import MCPServer, MCPTransport, ToolDefinition
from registry.tenancy import tenant_of


class MCPServerSerializer(StrictModelSerializer):
    # Lists of strings, said so in the schema: a JSONField takes "a b" and splits it into characters.
    args = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        required=False,
        help_text='The command\'s arguments, one string each: ["-m", "server"].',
    )
    idempotent_tools = serializers.ListField(
        child=serializers.CharField(min_length=1), required=False, help_text="Server-side names of tools safe to retry."
    )
    env = serializers.DictField(child=serializers.CharField(min_length=1), write_only=True, required=False)
    headers = serializers.DictField(child=serializers.CharField(min_length=1), write_only=True, required=False)
    oauth_client = serializers.DictField(
        child=serializers.CharField(min_length=1),
        write_only=True,
        required=False,
        help_text='Credentials registered with the authorization server by hand: {"client_id", "client_secret", '
        '"issuer"} (docs/mcp.md, OAuth).',
    )
    env_keys = serializers.SerializerMethodField()
    header_keys = serializers.SerializerMethodField()
    tool_count = serializers.SerializerMethodField()

    class Meta:
        model = MCPServer
        fields = (
            "id",
            "name",
            "tenant_id",
            "transport",
            "command",
            "args",
            "env",
            "env_keys",
            "url",
            "headers",
            "header_keys",
            "allow_private_network",
            "enabled",
            "status",
            "last_error",
            "connected_at",
            "approval_policy",
            "call_timeout_seconds",
            "idempotent_tools",
            "authorization",
            "oauth_client",
            "tool_count",
            "created_at",
            "updated_at",
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
    title = serializers.CharField(allow_blank=True, help_text="the tool's display title ('' when none)")
    icons = serializers.ListField(
        child=serializers.DictField(), help_text="src, mime_type, sizes, theme, inline (a data: image)"
    )
    definition_hash = serializers.CharField(help_text="SHA-256 of the whole tools/list entry an approval binds to")


class MCPServerViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
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
            {
                "name": r.name,
                "description": r.description,
                "state": tool_state(r),
                "reason": r.status_message,
                "annotations": _remote(r).get("annotations") or {},
                "title": title_of(_remote(r)),
                "icons": icons_of(_remote(r)),
                "definition_hash": definition_hash(_remote(r)),
            }
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
            refused_url = _url_refusal(exc)
            if refused_url is not None:
                raise refused_url from None
            raise APIValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages) from None
        if isinstance(exc, MCPError):
            raise _BadGateway(str(exc)) from None
        return False


def _url_refusal(exc: ValidationError) -> Exception | None:
    """A well-formed url the network rules refuse: 403 for a private address, 422 for a
    host that does not resolve (the schema can say neither; docs/api.md)."""
    errors = getattr(exc, "error_dict", {}).get("url") or []
    detail = "; ".join(f"url: {message}" for error in errors for message in error)
    codes = {error.code for error in errors}
    if services.URL_PRIVATE in codes:
        return APIPermissionDenied(detail)
    if services.URL_UNRESOLVABLE in codes:
        return _UnresolvableURL(detail)
    return None


class _UnresolvableURL(APIPermissionDenied):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "unresolvable_host"


class _BadGateway(APIPermissionDenied):
    status_code = status.HTTP_502_BAD_GATEWAY
    default_code = "mcp_server_failed"


class MCPServerScheme(StrictSerializerScheme):
    """The body of POST and PUT is one of two shapes, chosen by ``transport`` (the rules of
    registry.mcp.services._apply): a stdio server needs a non-blank ``command``; a
    Streamable HTTP one needs a ``url`` that check_url accepts before the host lookup.
    PATCH changes a stored server, so its body stays one shape (every field optional)."""

    target_class = "registry.mcp.api.MCPServerSerializer"
    priority = 1

    def map_serializer(self, auto_schema: Any, direction: str) -> dict:
        schema = super().map_serializer(auto_schema, direction)
        if direction != "request":
            return schema
        properties = schema["properties"]
        http_url = {**properties["url"], "pattern": HTTP_URL_PATTERN}
        if auto_schema.method == "PATCH":
            return {**schema, "properties": {**properties, "url": http_url}}
        branches = {
            MCPTransport.STDIO: (
                "StdioMCPServerRequest",
                "command",
                {"command": {**properties["command"], "minLength": 1, "pattern": NON_BLANK_TEXT}},
            ),
            MCPTransport.STREAMABLE_HTTP: ("StreamableHttpMCPServerRequest", "url", {"url": http_url}),
        }
        refs = {}
        for transport, (name, needed, overrides) in branches.items():
            branch = {
                **schema,
                "properties": {**properties, "transport": {"type": "string", "enum": [transport.value]}, **overrides},
                "required": sorted({*schema.get("required", []), "transport", needed}),
            }
            component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=branch)
            auto_schema.registry.register_on_missing(component)
            refs[transport.value] = component.ref["$ref"]
        return {
            "oneOf": [{"$ref": ref} for ref in refs.values()],
            "discriminator": {"propertyName": "transport", "mapping": refs},
        }
