"""REST for pending tool approvals (/api/approvals/): list them, approve, edit or reject one.

The chat page decides over its websocket; this is the same decision for other
clients. Only rows of the caller's tenant are ever listed or found, and only
the caller's own unless they hold ``registry.decide_pendingapproval``.
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.exceptions import PermissionDenied as APIPermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from conversations import approvals, runs
from conversations.loop import run_turn
from conversations.models import Conversation
from conversations.turn_reservations import TurnInProgress
from eunice import drain
from eunice.serializers import StrictSerializer
from registry.approvals import DECIDE_ANY, ApprovalConflict, ApprovalNotFound
from registry.models import PendingApproval
from registry.tenancy import tenant_of


class PendingApprovalSerializer(serializers.ModelSerializer):
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = PendingApproval
        fields = (
            "id",
            "conversation_id",
            "tool_name",
            "arguments",
            "shown",
            "args_hash",
            "status",
            "decided_by",
            "decided_at",
            "reason",
            "outcome",
            "source",
            "original_arguments",
            "created_at",
            "expires_at",
        )
        read_only_fields = fields


class ApproveSerializer(StrictSerializer):
    args_hash = serializers.CharField(max_length=64, help_text="The hash of the call you were shown.")


class EditSerializer(StrictSerializer):
    args_hash = serializers.CharField(max_length=64, help_text="The hash of the call you were shown and edited.")
    arguments = serializers.DictField(help_text="The arguments to run instead of the model's (a JSON object).")


class RejectSerializer(StrictSerializer):
    args_hash = serializers.CharField(max_length=64, required=False)
    reason = serializers.CharField(max_length=1000, required=False, allow_blank=True)


class Conflict(APIPermissionDenied):
    status_code = status.HTTP_409_CONFLICT
    default_code = "approval_conflict"


class PendingApprovalViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Tool calls waiting for a person: ``?status=pending`` for the undecided ones,
    ``?conversation=<id>`` for one conversation's."""

    serializer_class = PendingApprovalSerializer
    queryset = PendingApproval.objects.none()

    def get_queryset(self):  # noqa: ANN201
        tenant = tenant_of(self.request.user)
        if tenant is None:
            return PendingApproval.objects.none()
        rows = PendingApproval.objects.for_tenant(tenant).select_related("decided_by").order_by("-created_at")
        if not self.request.user.has_perm(DECIDE_ANY):
            rows = rows.filter(user=self.request.user)
        # A row past its time is closed before it is read, as the chat page does, so
        # ?status=pending never lists a call that can no longer be decided.
        approvals.expire_overdue_among(rows)
        params = self.request.query_params
        if params.get("status"):
            rows = rows.filter(status=params["status"])
        if params.get("conversation"):
            rows = rows.filter(conversation_id=params["conversation"])
        return rows

    @extend_schema(request=ApproveSerializer, responses={200: PendingApprovalSerializer})
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        """Approve the call and run it (returns when it has run)."""
        body = ApproveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._decide(pk, "approve", body.validated_data["args_hash"], "")

    @extend_schema(request=EditSerializer, responses={200: PendingApprovalSerializer})
    @action(detail=True, methods=["post"])
    def edit(self, request: Request, pk: str | None = None) -> Response:
        """Approve the call with your arguments instead of the model's, and run it."""
        body = EditSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        return self._decide(pk, "edit", data["args_hash"], "", arguments=dict(data["arguments"]))

    @extend_schema(request=RejectSerializer, responses={200: PendingApprovalSerializer})
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        """Reject the call; the reason is what the model reads."""
        body = RejectSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._decide(pk, "reject", body.validated_data.get("args_hash"), body.validated_data.get("reason", ""))

    def _decide(
        self, pk: str | None, decision: str, expected: str | None, reason: str, arguments: dict | None = None
    ) -> Response:
        try:
            card = approvals.decide(
                str(pk),
                decision,
                acting_user=self.request.user,
                expected_hash=expected,
                reason=reason,
                arguments=arguments,
            )
        except ApprovalNotFound:
            raise NotFound("no such approval") from None
        except PermissionDenied as exc:
            raise APIPermissionDenied(str(exc)) from None
        except ApprovalConflict as exc:
            raise Conflict(str(exc)) from None
        except ValueError as exc:
            raise ValidationError({"arguments": [str(exc)]}) from None
        resumed = resume_turn(str(pk), card.get("resume"))
        row = PendingApproval.objects.select_related("decided_by").get(pk=pk)
        return Response({**PendingApprovalSerializer(row).data, "resumed": resumed})


def resume_turn(approval_id: str, resume: dict | None) -> str | None:
    """Resume the turn the decided call paused (returns when it is done): its stop reason,
    or None when there was none to resume or it could not start now (then the decision
    is a turn of its own, which the model reads on the next)."""
    if resume is None:
        return None
    row = PendingApproval.objects.get(pk=approval_id)
    conversation = Conversation.objects.filter(pk=row.conversation_id, tenant_id=row.tenant_id).first()
    if conversation is None:
        return None
    owner = conversation.user
    if drain.draining() or not runs.try_start(owner.pk):
        approvals.report_by_id(approval_id, owner)
        return None
    try:
        outcome = async_to_sync(drain.run_tracked)(
            conversation.pk, run_turn, conversation, text=resume["text"], user=owner, events=resume["events"]
        )
    except TurnInProgress:
        approvals.report_by_id(approval_id, owner)
        return None
    finally:
        runs.finish(owner.pk)
    return outcome.stop_reason
