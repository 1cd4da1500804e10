"""REST views of the catalog: upload and list a conversation's datasets; download a file;
upload and list documents.

A conversation's datasets and the files made in it are its owner's alone,
within the owner's tenant (as the conversation itself: conversations.access);
an uploaded document is its uploader's; a file made outside any conversation by
no user belongs to its tenant; staff read all of their tenant's (docs/access.md).
Another user's conversation or file answers 404, exactly like one that does not exist.
"""

from __future__ import annotations

import zipfile
from pathlib import PurePath

from django.core.files.uploadedfile import UploadedFile
from django.core.validators import RegexValidator
from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiRequest, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.access import owned_conversation
from datacatalog.access import readable_files, upload_names
from datacatalog.files import save_upload
from datacatalog.models import CatalogDataset
from datacatalog.store import NAME_RULE, CatalogError, ConversationCatalog
from datacatalog.uploads import EXCEL_MIME, upload_dataset
from eunice.bounded_read import check_zip
from eunice.tenant_files import is_tenant_file
from registry.context import ToolContext
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


# The media types each upload takes, with the suffix that names the format: a file
# part's own suffix decides, and its Content-Type names the format when the filename
# has no suffix (a browser names a Blob "blob").
DATASET_TYPES = {
    "text/csv": ".csv",
    "text/tab-separated-values": ".tsv",
    "application/json": ".json",
    EXCEL_MIME: ".xlsx",
    "application/vnd.apache.parquet": ".parquet",
}
DOCUMENT_TYPES = {
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/html": ".html",
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
}


def _upload_form(component: str, types: dict[str, str], **extra: serializers.Field) -> OpenApiRequest:
    form = inline_serializer(component, {"file": serializers.FileField(), **extra})
    return OpenApiRequest(request=form, encoding={"file": {"contentType": ", ".join(types)}})


# Office Open XML files are ZIP containers, so tools that name a file by its first bytes
# call them ``.zip``. Such a part is read as the OOXML type it declares only when the
# container holds that type's main part: the declared type never overrides what is there.
OOXML_MAIN_PART = {".xlsx": "xl/workbook.xml", ".docx": "word/document.xml"}


def _upload_name(upload: UploadedFile, types: dict[str, str]) -> str:
    """The file's name (never a path the client chose); one with no suffix at all takes the
    suffix its Content-Type names. A suffix the file has always decides (``run.sh`` sent as
    text/plain is still a shell script), except a ``.zip`` that is the OOXML file it declares."""
    name = PurePath(upload.name or "upload").name
    declared = types.get((upload.content_type or "").split(";")[0].strip().lower(), "")
    suffix = PurePath(name).suffix
    if not suffix:
        return name + declared
    if suffix.lower() == ".zip" and declared in OOXML_MAIN_PART and _holds(upload, OOXML_MAIN_PART[declared]):
        return PurePath(name).stem + declared
    return name


def _holds(upload: UploadedFile, member: str) -> bool:
    """Whether the uploaded ZIP container lists ``member`` (its central directory only,
    within the archive limits; nothing is decompressed; InputTooLarge is a ValueError).
    The upload is rewound for whoever reads it next."""
    try:
        with check_zip(upload.file, what=f"{upload.name!r}") as container:
            return member in container.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return False
    finally:
        upload.seek(0)


def _describe(entry: CatalogDataset) -> dict:
    return {
        "name": entry.name,
        "rows": entry.rows,
        "columns": entry.columns,
        "size_bytes": entry.size_bytes,
        "source": entry.source,
        "source_detail": entry.source_detail,
        "created_at": entry.created_at,
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

    @extend_schema(
        request=_upload_form(
            "DatasetUpload",
            DATASET_TYPES,
            name=serializers.CharField(
                required=False,
                allow_blank=True,
                help_text="the dataset's name (default: the file's stem)",
                validators=[RegexValidator(NAME_RULE.pattern)],
            ),
        ),
        responses={201: DatasetSerializer, 400: _ERROR, 413: _ERROR},
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        catalog = _catalog(request, conversation_id)
        upload = request.FILES.get("file")
        if upload is None:
            return Response(
                {"error": "send the file as the multipart field 'file'"}, status=status.HTTP_400_BAD_REQUEST
            )
        from django.conf import settings

        limit = settings.DATA["UPLOAD_MAX_BYTES"]
        if upload.size > limit:  # refuse before reading it into memory
            return Response(
                {"error": f"{upload.name!r} is {upload.size:,} bytes; the upload limit is {limit:,}"},
                status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            )
        try:
            entry = upload_dataset(
                catalog, _upload_name(upload, DATASET_TYPES), upload.read(), name=request.data.get("name") or None
            )
        except CatalogError as exc:
            return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(_describe(entry), status=status.HTTP_201_CREATED)


class FileDownloadView(APIView):
    """GET /files/<id>/: the file, for whoever may read it (datacatalog.access.readable_files:
    its uploader, the owner of the conversation it was made in, the tenant's staff; any user of
    the tenant for a file made outside any conversation by no user)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request: Request, file_id: int) -> FileResponse:
        tenant = tenant_of(request.user)
        generated = readable_files(_caller(request, tenant)).filter(pk=file_id).first() if tenant else None
        if generated is None or not is_tenant_file(generated.tenant_id, generated.path):
            raise Http404("no such file")
        try:
            handle = open(generated.path, "rb")  # noqa: SIM115 - FileResponse closes it
        except OSError:
            raise Http404("the file is no longer available") from None
        return FileResponse(
            handle,
            as_attachment=True,
            filename=generated.filename,
            content_type=generated.mime_type or "application/octet-stream",
        )


DOCUMENT_SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm", ".pdf", ".docx")


class DocumentUploadView(APIView):
    """POST (multipart ``file``): upload a document for ``index_content``. It is yours (and your
    tenant's staff'): a colleague never lists, indexes or replaces it, and their upload of the
    same name is a file of their own. Uploading a name again replaces your earlier file.

    GET: the names you may index: your uploads and the tenant's shared folder.
    """

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser]
    throttle_scope = "upload"  # counted on POST only (eunice.throttling.WriteScopedThrottle)

    @extend_schema(
        responses={
            200: inline_serializer("UploadList", {"uploads": serializers.ListField(child=serializers.CharField())})
        }
    )
    def get(self, request: Request) -> Response:
        return Response({"uploads": upload_names(_caller(request, _tenant(request)))})

    @extend_schema(
        request=_upload_form("DocumentUpload", DOCUMENT_TYPES),
        responses={
            201: inline_serializer(
                "UploadedDocument", {"name": serializers.CharField(), "size_bytes": serializers.IntegerField()}
            ),
            400: _ERROR,
            413: _ERROR,
        },
    )
    def post(self, request: Request) -> Response:
        from django.conf import settings

        tenant = _tenant(request)
        upload = request.FILES.get("file")
        if upload is None:
            return Response(
                {"error": "send the document as the multipart field 'file'"}, status=status.HTTP_400_BAD_REQUEST
            )
        name = _upload_name(upload, DOCUMENT_TYPES)
        if not name.lower().endswith(DOCUMENT_SUFFIXES):
            return Response(
                {"error": f"{name!r} is not a document this can index; use one of {', '.join(DOCUMENT_SUFFIXES)}"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        limit = settings.DATA["UPLOAD_MAX_BYTES"]
        if upload.size > limit:
            return Response(
                {"error": f"{name!r} is {upload.size:,} bytes; the upload limit is {limit:,}"},
                status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            )
        saved = save_upload(
            tenant, acting_user=request.user, name=name, chunks=upload.chunks(), mime_type=upload.content_type or ""
        )
        return Response({"name": name, "size_bytes": saved.size_bytes}, status=status.HTTP_201_CREATED)


def _tenant(request: Request) -> str:
    tenant = tenant_of(request.user)
    if tenant is None:
        raise Http404("your account belongs to no tenant")
    return tenant


def _caller(request: Request, tenant: str) -> ToolContext:
    """The request's user as a tool context names a caller, for the access rules."""
    return ToolContext(tenant_id=tenant, user_id=str(request.user.pk))
