"""REST for pending tool approvals (/api/approvals/): list them, approve or reject one.

The chat page decides over its websocket; this is the same decision for other
clients. Only rows of the caller's tenant are ever listed or found, and only
the caller's own unless they hold ``registry.decide_pendingapproval``.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.exceptions import PermissionDenied as APIPermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from conversations import approvals
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
            "created_at",
            "expires_at",
        )
        read_only_fields = fields


class ApproveSerializer(StrictSerializer):
    args_hash = serializers.CharField(max_length=64, help_text="The hash of the call you were shown.")


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

    @extend_schema(request=RejectSerializer, responses={200: PendingApprovalSerializer})
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        body = RejectSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._decide(pk, "reject", body.validated_data.get("args_hash"), body.validated_data.get("reason", ""))

    def _decide(self, pk: str | None, decision: str, expected: str | None, reason: str) -> Response:
        try:
            approvals.decide(str(pk), decision, acting_user=self.request.user, expected_hash=expected, reason=reason)
        except ApprovalNotFound:
            raise NotFound("no such approval") from None
        except PermissionDenied as exc:
            raise APIPermissionDenied(str(exc)) from None
        except ApprovalConflict as exc:
            raise Conflict(str(exc)) from None
        row = PendingApproval.objects.select_related("decided_by").get(pk=pk)
        return Response(PendingApprovalSerializer(row).data)
