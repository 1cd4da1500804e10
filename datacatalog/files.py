"""Uploads and exported files as GeneratedFile rows (where they live: eunice.tenant_files)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from pathlib import Path

from django.db import transaction

from datacatalog.models import GeneratedFile
from eunice.tenant_files import catalog_dir, safe_name, user_uploads_dir
from registry.cards import CardType

UPLOAD_TOOL = "document_upload"  # GeneratedFile.source_tool of a document a user uploaded


@transaction.atomic
def save_upload(
    tenant_id: str, *, acting_user: object, name: str, chunks: Iterable[bytes], mime_type: str = ""
) -> GeneratedFile:
    """Store ``chunks`` as ``acting_user``'s upload ``name`` (replacing their own upload of that
    name, never anyone else's: a colleague's file of the same name is a separate file).

    Returns the GeneratedFile row (``user`` set: the upload is the user's alone, and their
    tenant's staff'). Raises OSError when the disk refuses the write.
    """
    folder = user_uploads_dir(tenant_id, acting_user.pk)  # type: ignore[attr-defined]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex[:12]}-{safe_name(name)}"
    size = 0
    with open(path, "wb") as target:
        for chunk in chunks:
            target.write(chunk)
            size += len(chunk)
    previous = GeneratedFile.objects.select_for_update().filter(
        tenant_id=tenant_id, user=acting_user, source_tool=UPLOAD_TOOL, filename=name
    )
    for old in previous:
        Path(old.path).unlink(missing_ok=True)
    previous.delete()
    return GeneratedFile.objects.create(
        tenant_id=tenant_id,
        user=acting_user,
        filename=name,
        path=str(path),
        mime_type=mime_type,
        size_bytes=size,
        source_tool=UPLOAD_TOOL,
    )


def register_export(
    tenant_id: str,
    conversation_id: str | None,
    filename: str,
    payload: bytes,
    mime_type: str,
    *,
    source_tool: str,
) -> dict:
    """Write ``payload`` under the tenant's exports and record it as a GeneratedFile.

    Returns the export dict a ToolResult carries (``file_id`` lets the dispatcher
    reuse the row instead of making a second one).
    """
    directory = catalog_dir(tenant_id, "exports")
    path = directory / f"{uuid.uuid4().hex[:12]}-{safe_name(filename)}"
    path.write_bytes(payload)
    generated = GeneratedFile.objects.create(
        tenant_id=tenant_id,
        conversation_id=conversation_id,
        filename=safe_name(filename),
        path=str(path),
        mime_type=mime_type,
        size_bytes=len(payload),
        source_tool=source_tool,
    )
    return export_dict(generated)


def export_dict(generated: GeneratedFile) -> dict:
    return {
        "file_id": generated.pk,
        "original_filename": generated.filename,
        "path": generated.path,
        "mime_type": generated.mime_type,
        "size_bytes": generated.size_bytes,
        "url": download_url(generated.pk),
    }


def download_url(file_id: int) -> str:
    from django.urls import reverse

    return reverse("file-download", args=[file_id])


def file_card(export: dict) -> dict:
    """The ``file_download`` card the UI shows for an export."""
    return {
        "type": CardType.FILE_DOWNLOAD,
        "file_id": export["file_id"],
        "filename": export["original_filename"],
        "mime_type": export["mime_type"],
        "size_bytes": export["size_bytes"],
        "url": export["url"],
    }
