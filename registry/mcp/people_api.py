"""REST API for what the chat page offers of MCP servers to a person: prompts as slash
commands (/api/mcp/prompts/) and resources to attach to a message (/api/mcp/resources/).

``GET /api/mcp/prompts/`` lists the prompts of the caller's tenant's enabled servers;
``POST …/render/`` fills one in and answers its messages. ``GET /api/mcp/resources/``
lists their resources; ``POST …/attach/`` reads one as the text attached to a message.
The chat page puts either into the composer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied as APIPermissionDenied
from rest_framework.exceptions import ValidationError as APIValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from eunice.openapi import NON_BLANK_TEXT
from registry.mcp import MCPError, attachments, prompts
from registry.mcp.api import _BadGateway
from registry.tenancy import tenant_of


class PromptArgumentSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    # A declared field, popped from the class by DRF's metaclass; mypy sees Field.required.
    required = serializers.BooleanField()  # type: ignore[assignment]


class PromptSerializer(serializers.Serializer):
    command = serializers.CharField(help_text="What the person types: /server:prompt")
    server = serializers.CharField()
    name = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    description = serializers.CharField(allow_blank=True)
    arguments = PromptArgumentSerializer(many=True)


class FromServersSerializer(serializers.Serializer):
    unavailable = serializers.DictField(
        child=serializers.CharField(), help_text="Servers that could not be asked, and why."
    )


class OnServerSerializer(serializers.Serializer):
    server = serializers.RegexField(NON_BLANK_TEXT, max_length=200)


class PromptListSerializer(FromServersSerializer):
    prompts = PromptSerializer(many=True)


class RenderRequestSerializer(OnServerSerializer):
    name = serializers.RegexField(NON_BLANK_TEXT, max_length=200)
    arguments = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=prompts.ARGUMENT_CHARS), required=False
    )


class PromptMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["user", "assistant"])
    text = serializers.CharField(allow_blank=True)


class RenderedSerializer(serializers.Serializer):
    messages = PromptMessageSerializer(many=True)


class MCPPromptViewSet(viewsets.ViewSet):
    @extend_schema(responses={200: PromptListSerializer})
    def list(self, request: Request) -> Response:
        found, unavailable = prompts.offered(_tenant(request))
        listed = [{**vars(prompt), "command": prompt.command} for prompt in found]
        return Response(PromptListSerializer({"prompts": listed, "unavailable": unavailable}).data)

    @extend_schema(request=RenderRequestSerializer, responses={200: RenderedSerializer})
    @action(detail=False, methods=["post"])
    def render(self, request: Request) -> Response:
        data = _valid(RenderRequestSerializer, request)
        with _as_api_errors():
            messages = prompts.render(_tenant(request), data["server"], data["name"], data.get("arguments") or {})
        return Response(RenderedSerializer({"messages": messages}).data)


def _valid(serializer: type[serializers.Serializer], request: Request) -> dict:
    asked = serializer(data=request.data)
    asked.is_valid(raise_exception=True)
    return dict(asked.validated_data)


@contextmanager
def _as_api_errors() -> Iterator[None]:
    """A request naming what the tenant has not → 400 naming the field; a server that fails → 502."""
    try:
        yield
    except prompts.RequestError as exc:
        raise APIValidationError({exc.field: [str(exc)]}) from None
    except MCPError as exc:
        raise _BadGateway(str(exc)) from None


def _tenant(request: Request) -> str:
    tenant = tenant_of(request.user)
    if tenant is None:
        raise APIPermissionDenied("your account belongs to no tenant; ask staff to add a tenant membership")
    return tenant


class ResourceSerializer(serializers.Serializer):
    server = serializers.CharField()
    uri = serializers.CharField()
    name = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    mime_type = serializers.CharField(allow_blank=True)
    description = serializers.CharField(allow_blank=True)


class ResourceListSerializer(FromServersSerializer):
    resources = ResourceSerializer(many=True)


class AttachRequestSerializer(OnServerSerializer):
    uri = serializers.RegexField(NON_BLANK_TEXT, max_length=2000)


class AttachmentSerializer(serializers.Serializer):
    text = serializers.CharField(help_text="The resource as text for the message, delimited and capped.")


class MCPResourceViewSet(viewsets.ViewSet):
    @extend_schema(responses={200: ResourceListSerializer})
    def list(self, request: Request) -> Response:
        found, unavailable = attachments.offered(_tenant(request))
        return Response(ResourceListSerializer({"resources": found, "unavailable": unavailable}).data)

    @extend_schema(request=AttachRequestSerializer, responses={200: AttachmentSerializer})
    @action(detail=False, methods=["post"])
    def attach(self, request: Request) -> Response:
        data = _valid(AttachRequestSerializer, request)
        with _as_api_errors():
            text = attachments.attachment(_tenant(request), data["server"], data["uri"])
        return Response(AttachmentSerializer({"text": text}).data)
