"""REST API for MCP prompts (/api/mcp/prompts/): what the chat page offers as slash commands.

``GET`` lists the prompts of the caller's tenant's enabled servers; ``POST …/render/``
fills one in and answers its messages, which the chat page puts into the composer.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied as APIPermissionDenied
from rest_framework.exceptions import ValidationError as APIValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from eunice.openapi import NON_BLANK_TEXT
from registry.mcp import MCPError, prompts
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


class PromptListSerializer(serializers.Serializer):
    prompts = PromptSerializer(many=True)
    unavailable = serializers.DictField(
        child=serializers.CharField(), help_text="Servers that could not be asked, and why."
    )


class RenderRequestSerializer(serializers.Serializer):
    server = serializers.RegexField(NON_BLANK_TEXT, max_length=200)
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
        asked = RenderRequestSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        data = asked.validated_data
        try:
            messages = prompts.render(_tenant(request), data["server"], data["name"], data.get("arguments") or {})
        except prompts.PromptError as exc:
            raise APIValidationError({exc.field: [str(exc)]}) from None
        except MCPError as exc:
            raise _BadGateway(str(exc)) from None
        return Response(RenderedSerializer({"messages": messages}).data)


def _tenant(request: Request) -> str:
    tenant = tenant_of(request.user)
    if tenant is None:
        raise APIPermissionDenied("your account belongs to no tenant; ask staff to add a tenant membership")
    return tenant
