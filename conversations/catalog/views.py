"""REST views of the catalog: upload and list a conversation's datasets; download a file.

A conversation's datasets and the files made in it are its owner's alone,
within the owner's tenant (as the conversation itself: conversations.access);
a file made outside any conversation belongs to its tenant. Another user's
conversation or file answers 404, exactly like one that does not exist.
"""

from __future__ import annotations

from django.db.models import Q
from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.access import owned_conversation
from conversations.catalog.files import is_tenant_file
from conversations.catalog.store import CatalogError, ConversationCatalog
from conversations.catalog.uploads import upload_dataset
from conversations.models import CatalogDataset, GeneratedFile
from registry.tenancy import tenant_of


# What the views answer, for the OpenAPI schema (the views build plain dicts).
_ERROR = inline_serializer("UploadError", {"error": serializers.CharField()})


class DatasetSerializer(serializers.Serializer):
    name = serializers.CharField()
    rows = serializers.IntegerField()
    columns = serializers.ListField(child=serializers.DictField(), help_text="[{name, dtype}]")
    size_bytes = serializers.IntegerField()
    source = serializers.CharField()
    source_detail = serializers.CharField()
    created_at = serializers.DateTimeField()


class DatasetListSerializer(serializers.Serializer):
    datasets = DatasetSerializer(many=True)


def _upload_form(component: str, **extra: serializers.Field) -> dict:
    return {"multipart/form-data": inline_serializer(component, {"file": serializers.FileField(), **extra})}


def _describe(entry: CatalogDataset) -> dict:
    return {
        "name": entry.name, "rows": entry.rows, "columns": entry.columns, "size_bytes": entry.size_bytes,
        "source": entry.source, "source_detail": entry.source_detail, "created_at": entry.created_at,
    }


def _catalog(request: Request, conversation_id: str) -> ConversationCatalog:
    conversation = owned_conversation(request.user, conversation_id)
    if conversation is None:
        raise Http404("no such conversation")
    return ConversationCatalog(conversation.tenant_id, conversation.pk)


class ConversationDatasetsView(APIView):
    """GET: the conversation's datasets. POST (multipart ``file``, optional ``name``): upload one."""

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser]
    throttle_scope = "upload"  # counted on POST only (eunice.throttling.WriteScopedThrottle)

    @extend_schema(responses={200: DatasetListSerializer})
    def get(self, request: Request, conversation_id: str) -> Response:
        catalog = _catalog(request, conversation_id)
        return Response({"datasets": [_describe(entry) for entry in catalog.entries()]})

    @extend_schema(request=_upload_form("DatasetUpload", name=serializers.CharField(required=False)),
                   responses={201: DatasetSerializer, 400: _ERROR, 413: _ERROR})
    def post(self, request: Request, conversation_id: str) -> Response:
        catalog = _catalog(request, conversation_id)
        upload = request.FILES.get("file")
        if upload is None:
            return Response({"error": "send the file as the multipart field 'file'"}, status=status.HTTP_400_BAD_REQUEST)
        from django.conf import settings

        limit = settings.DATA["UPLOAD_MAX_BYTES"]
        if upload.size > limit:  # refuse before reading it into memory
            return Response({"error": f"{upload.name!r} is {upload.size:,} bytes; the upload limit is {limit:,}"},
                            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        try:
            entry = upload_dataset(catalog, upload.name, upload.read(), name=request.data.get("name") or None)
        except CatalogError as exc:
            return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(_describe(entry), status=status.HTTP_201_CREATED)


class FileDownloadView(APIView):
    """GET /files/<id>/: the file, for the owner of the conversation it was made in (any user of
    its tenant when it was made outside a conversation)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request: Request, file_id: int) -> FileResponse:
        tenant = tenant_of(request.user)
        generated = (
            GeneratedFile.objects.filter(pk=file_id, tenant_id=tenant)
            .filter(Q(conversation__isnull=True) | Q(conversation__user=request.user))
            .first() if tenant else None
        )
        if generated is None or not is_tenant_file(generated.tenant_id, generated.path):
            raise Http404("no such file")
        try:
            handle = open(generated.path, "rb")  # noqa: SIM115 - FileResponse closes it
        except OSError:
            raise Http404("the file is no longer available") from None
        return FileResponse(handle, as_attachment=True, filename=generated.filename,
                            content_type=generated.mime_type or "application/octet-stream")


DOCUMENT_SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm", ".pdf", ".docx")


class DocumentUploadView(APIView):
    """POST (multipart ``file``): put a document in your tenant's uploads, for ``index_content``.

    GET: the names of your uploads.
    """

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser]
    throttle_scope = "upload"  # counted on POST only (eunice.throttling.WriteScopedThrottle)

    @extend_schema(responses={200: inline_serializer("UploadList", {"uploads": serializers.ListField(
        child=serializers.CharField())})})
    def get(self, request: Request) -> Response:
        from tools.lib.files import list_uploads

        return Response({"uploads": list_uploads(_tenant(request))})

    @extend_schema(request=_upload_form("DocumentUpload"), responses={
        201: inline_serializer("UploadedDocument", {"name": serializers.CharField(),
                                                    "size_bytes": serializers.IntegerField()}),
        400: _ERROR, 413: _ERROR})
    def post(self, request: Request) -> Response:
        from pathlib import PurePath

        from django.conf import settings

        from tools.lib.files import uploads_dir

        tenant = _tenant(request)
        upload = request.FILES.get("file")
        if upload is None:
            return Response({"error": "send the document as the multipart field 'file'"}, status=status.HTTP_400_BAD_REQUEST)
        name = PurePath(upload.name).name  # never a path the client chose
        if not name.lower().endswith(DOCUMENT_SUFFIXES):
            return Response({"error": f"{name!r} is not a document this can index; use one of {', '.join(DOCUMENT_SUFFIXES)}"},
                            status=status.HTTP_400_BAD_REQUEST)
        limit = settings.DATA["UPLOAD_MAX_BYTES"]
        if upload.size > limit:
            return Response({"error": f"{name!r} is {upload.size:,} bytes; the upload limit is {limit:,}"},
                            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        folder = uploads_dir(tenant)
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / name, "wb") as target:
            for chunk in upload.chunks():
                target.write(chunk)
        return Response({"name": name, "size_bytes": upload.size}, status=status.HTTP_201_CREATED)


def _tenant(request: Request) -> str:
    tenant = tenant_of(request.user)
    if tenant is None:
        raise Http404("your account belongs to no tenant")
    return tenant
