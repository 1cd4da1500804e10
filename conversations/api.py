"""REST for conversations: create, list, search, rename, delete and restore them, post a
message (runs a turn), read messages and events."""

from __future__ import annotations

import asyncio

from asgiref.sync import async_to_sync
from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from conversations import cancels, listing, runs
from conversations.access import conversations_of
from conversations.loop import run_turn
from conversations.models import ChatMessage, Conversation, ConversationEvent
from conversations.turn_reservations import TurnInProgress
from eunice import drain
from eunice.openapi import ANY_TEXT, NON_BLANK_TEXT
from eunice.serializers import StrictModelSerializer, StrictSerializer
from registry.aio import reconnecting
from registry.tenancy import tenant_of

# The modes a user starts a conversation in (``delegate`` is the helper agents' own).
USER_MODES = (Conversation.Mode.CHAT, Conversation.Mode.AGENTIC)


class ConversationSerializer(StrictModelSerializer):
    mode = serializers.ChoiceField(
        choices=[(mode.value, mode.label) for mode in USER_MODES],
        default=Conversation.Mode.CHAT,
        error_messages={
            "invalid_choice": f'"{{input}}" is not a mode to start a conversation in; '
            f"use one of: {', '.join(USER_MODES)}"
        },
    )

    class Meta:
        model = Conversation
        fields = ("id", "title", "mode", "tenant_id", "created_at", "updated_at")
        read_only_fields = ("id", "tenant_id", "created_at", "updated_at")


@extend_schema_field(
    {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NON_BLANK_TEXT, "description": "not only spaces"}
)
class _Title(serializers.CharField):
    """Trimmed, so one that is only whitespace is blank (refused): the schema says so."""


class RenameSerializer(StrictModelSerializer):
    title = _Title(max_length=200, trim_whitespace=True)

    class Meta:
        model = Conversation
        fields = ("id", "title", "mode", "tenant_id", "created_at", "updated_at")
        read_only_fields = ("id", "mode", "tenant_id", "created_at", "updated_at")


class MessageSerializer(serializers.ModelSerializer):
    class Meta:
        model = ChatMessage
        fields = ("message_id", "role", "text", "cards", "cost_usd", "created_at")


class EventSerializer(serializers.ModelSerializer):
    class Meta:
        model = ConversationEvent
        fields = ("turn", "sequence", "event_type", "data", "created_at")


# ?order= for a conversation's messages: oldest first (the default) or newest first.
MESSAGE_ORDERS = {"oldest": ("created_at", "id"), "newest": ("-created_at", "-id")}


@extend_schema_field(
    {
        "type": "string",
        "minLength": 1,
        "maxLength": settings.EUNICE_MAX_MESSAGE_CHARS,
        "pattern": NON_BLANK_TEXT,
        "description": "the message; not only whitespace",
    }
)
class _MessageText(serializers.CharField):
    """Trimmed, so one that is only whitespace is blank (refused): the schema says so."""


class PostMessageSerializer(StrictSerializer):
    text = _MessageText(max_length=settings.EUNICE_MAX_MESSAGE_CHARS, trim_whitespace=True)


TURN_REPLY = inline_serializer(
    "TurnReply",
    {
        "message": MessageSerializer(),
        "stop_reason": serializers.CharField(),
        "model_calls": serializers.IntegerField(),
        "cancelled": serializers.BooleanField(),
        "error": serializers.CharField(
            allow_null=True, help_text="why the model could not answer (stop_reason `error`); null otherwise"
        ),
    },
)


class CancelSerializer(StrictSerializer):
    tool_use_id = serializers.CharField(
        required=False, max_length=200, help_text="cancel only this running tool call; the turn goes on"
    )


CANCEL_REPLY = inline_serializer(
    "CancelReply",
    {
        "tool_use_id": serializers.CharField(allow_null=True),
        "running_here": serializers.BooleanField(
            help_text="the call ran in this server process (false: it was passed on to the others, if any)"
        ),
    },
)


TURN_INTERRUPTED = inline_serializer(
    "TurnInterrupted",
    {"detail": serializers.CharField(), "code": serializers.ChoiceField(choices=["turn_interrupted"])},
)

TURN_IN_PROGRESS = inline_serializer(
    "TurnInProgress",
    {
        "detail": serializers.CharField(),
        "code": serializers.ChoiceField(choices=["turn_in_progress"]),
        "running_turn": serializers.IntegerField(allow_null=True),
    },
)


class ServerStopping(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "server_stopping"


class TooManyRuns(APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "too_many_runs"


SEARCH = OpenApiParameter(
    "search",
    {"type": "string", "maxLength": listing.SEARCH_CHARS, "pattern": ANY_TEXT},
    description=f"only those whose title or any message contains this (case-insensitive, ≤ {listing.SEARCH_CHARS})",
)


@extend_schema_view(
    list=extend_schema(parameters=[SEARCH], description="Your conversations, the most recently active first."),
    partial_update=extend_schema(request=RenameSerializer, responses=ConversationSerializer, summary="Rename"),
    destroy=extend_schema(
        description="Deletes it: gone from lists and lookups (404) until restored with `POST …/restore/`."
    ),
)
class ConversationViewSet(viewsets.ModelViewSet):
    """Your conversations. Another user's or another tenant's are never listed or found (404)."""

    serializer_class = ConversationSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]  # a rename is a PATCH
    throttle_scope: str | None = None  # posting a message sets "turn" (eunice/throttling.py)

    def get_queryset(self):
        rows = conversations_of(self.request.user, deleted=self.action == "restore").by_activity()
        words = self.request.query_params.get("search", "") if self.action == "list" else ""
        if len(words) > listing.SEARCH_CHARS:
            raise ValidationError({"search": f"at most {listing.SEARCH_CHARS} characters; got {len(words)}"})
        if "\x00" in words:  # PostgreSQL takes no NUL in text
            raise ValidationError({"search": "must not contain NUL characters"})
        return rows.search(words.strip()) if words.strip() else rows

    def get_serializer_class(self):
        return RenameSerializer if self.action == "partial_update" else ConversationSerializer

    def perform_update(self, serializer) -> None:
        # A PATCH without a title (or with only read-only fields, as a GET returned them) changes nothing.
        if "title" in serializer.validated_data:
            listing.rename(serializer.instance, serializer.validated_data["title"], acting_user=self.request.user)

    def perform_destroy(self, instance: Conversation) -> None:
        listing.delete(instance, acting_user=self.request.user)

    @extend_schema(request=None, responses=ConversationSerializer)
    @action(detail=True, methods=["post"], url_path="restore")
    def restore(self, request: Request, pk: str | None = None) -> Response:
        """Undoes a delete: one you deleted is back, with everything in it (404 for any other)."""
        conversation = listing.restore(self.get_object(), acting_user=request.user)
        return Response(ConversationSerializer(conversation).data)

    def perform_create(self, serializer) -> None:
        tenant = tenant_of(self.request.user)
        if tenant is None:
            raise PermissionDenied("your account has no tenant; ask staff to add a tenant membership")
        serializer.save(tenant_id=tenant, user=self.request.user)

    @extend_schema(
        methods=["GET"],
        responses=MessageSerializer(many=True),
        parameters=[
            OpenApiParameter(
                "order",
                OpenApiTypes.STR,
                enum=list(MESSAGE_ORDERS),
                description="oldest first (the default) or newest first",
            ),
        ],
    )
    @extend_schema(
        methods=["POST"],
        request=PostMessageSerializer,
        responses={
            201: TURN_REPLY,
            409: OpenApiResponse(
                TURN_IN_PROGRESS,
                description=(
                    "a turn of this conversation is running (in any server process); nothing was stored: "
                    "wait for its answer or cancel it, then send again"
                ),
            ),
            503: OpenApiResponse(
                TURN_INTERRUPTED,
                description=(
                    "the server stopped before the answer was finished (after its shutdown grace); "
                    "the message and what the turn recorded are kept, the turn is closed as interrupted"
                ),
            ),
        },
    )
    @action(detail=True, methods=["get", "post"], url_path="messages", throttle_scope="turn")
    def messages(self, request: Request, pk: str | None = None) -> Response:
        """GET: the messages, a page at a time (``?order=newest`` for the latest first).
        POST {"text": ...}: answer it (returns when the turn is done); 409 while another turn runs."""
        conversation = self.get_object()
        if request.method == "GET":
            order = MESSAGE_ORDERS.get(request.query_params.get("order", "oldest"))
            if order is None:
                raise ValidationError(
                    {"order": f"must be one of {', '.join(MESSAGE_ORDERS)}; got {request.query_params['order'][:40]!r}"}
                )
            rows = ChatMessage.objects.filter(conversation=conversation).order_by(*order)
            return self._page(rows, MessageSerializer)
        body = PostMessageSerializer(data=request.data)
        if not body.is_valid():
            raise ValidationError(body.errors)
        if drain.draining():
            raise ServerStopping(drain.REFUSED)
        if not runs.try_start(request.user.pk):
            raise TooManyRuns(runs.too_many_message())
        try:
            outcome = async_to_sync(drain.run_tracked)(
                conversation.pk, run_turn, conversation, text=body.validated_data["text"], user=request.user
            )
        except runs.RunCapReached as full:  # the user's answers in other server processes fill the cap
            raise TooManyRuns(str(full)) from None
        except TurnInProgress as busy:
            return Response(
                {"detail": str(busy), "code": "turn_in_progress", "running_turn": busy.turn},
                status=status.HTTP_409_CONFLICT,
            )
        except asyncio.CancelledError:
            # The server stopping cancelled the turn after its grace (eunice/drain.py); the
            # turn closed itself as interrupted. The request thread itself is not cancelled.
            return Response(
                {"detail": drain.INTERRUPTED, "code": "turn_interrupted"},
                status=status.HTTP_503_SERVICE_UNAVAILABLE,
                headers={"Retry-After": str(drain.RETRY_AFTER_SECONDS)},
            )
        finally:
            runs.finish(request.user.pk)
        # The turn ran on other threads: this request's connection may have gone meanwhile.
        reply = reconnecting(_last_reply)(conversation)
        return Response(
            {
                "message": MessageSerializer(reply).data,
                "stop_reason": outcome.stop_reason,
                "model_calls": outcome.model_calls,
                "cancelled": outcome.cancelled,
                "error": outcome.error,
            },
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=CancelSerializer, responses={202: CANCEL_REPLY})
    @action(detail=True, methods=["post"], url_path="cancel")
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """POST {}: cancel the running turn. POST {"tool_use_id": ...}: cancel that tool call only;
        its result is ``Cancelled`` and the turn goes on with the other calls."""
        conversation = self.get_object()
        body = CancelSerializer(data=request.data)
        if not body.is_valid():
            raise ValidationError(body.errors)
        tool_use_id = body.validated_data.get("tool_use_id")
        here = cancels.cancel(conversation, tool_use_id)
        return Response({"tool_use_id": tool_use_id, "running_here": here}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses=EventSerializer(many=True))
    @action(detail=True, methods=["get"], url_path="events")
    def events(self, request: Request, pk: str | None = None) -> Response:
        conversation = self.get_object()
        rows = ConversationEvent.objects.filter(conversation=conversation).order_by("turn", "sequence")
        return self._page(rows, EventSerializer)

    def _page(self, rows, serializer: type[serializers.Serializer]) -> Response:
        """One page of ``rows``, as every list of the API is paged (eunice/pagination.py)."""
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(serializer(page, many=True).data)


def _last_reply(conversation: Conversation) -> ChatMessage | None:
    return ChatMessage.objects.filter(conversation=conversation, role=ChatMessage.Role.ASSISTANT).last()
