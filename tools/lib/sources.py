"""Load what index_content is asked to index: an upload, a generated file, or inline text."""

from __future__ import annotations

from dataclasses import dataclass

from eunice import tenant_files as files
from registry.context import ToolContext
from registry.contract import HintException
from tools.lib.extract import (
    FORMATS,
    RefusedDocument,
    UnreadableDocument,
    UnsupportedFormat,
    detect_format,
    extract_text,
)


@dataclass(frozen=True)
class LoadedDocument:
    source: str
    title: str
    format: str
    text: str


def load_item(item: dict, context: ToolContext) -> LoadedDocument:
    """Read and extract one ``{upload | file_id | text}`` item for the caller behind the tool
    ``context`` (a file_id only if the file is theirs: datacatalog.access.readable_files).
    Raises HintException for a bad item."""
    conversation_id = str(context.conversation_id or "")
    given = [key for key in ("upload", "file_id", "text") if key in item]
    if len(given) != 1:
        raise HintException(
            "schema",
            f"each item needs exactly one of upload, file_id or text; got {given or 'none'}",
            [
                {"label": '{"upload": "report.pdf"}', "score": 0.9},
                {"label": '{"file_id": 12}', "score": 0.8},
                {"label": '{"text": "…", "title": "Notes", "format": "markdown"}', "score": 0.7},
            ],
        )
    if "upload" in item:
        data, name, mime, source = _upload(item["upload"], context)
    elif "file_id" in item:
        data, name, mime, source = _generated(item["file_id"], context, conversation_id)
    else:
        title = item.get("title") or "Untitled"
        data, name, mime, source = item["text"].encode(), "", "", f"inline:{title}"
    try:
        fmt = item.get("format") or detect_format(name, mime, data)
        found_title, text = extract_text(data, fmt)
    except UnsupportedFormat as error:
        raise HintException(
            "schema", f"{name or 'item'}: {error}", [{"label": f, "score": 0.5} for f in FORMATS]
        ) from None
    except RefusedDocument as error:
        raise HintException("schema", f"{name or 'item'}: {error}") from None
    except UnreadableDocument as error:
        raise HintException(
            "schema", f"{name or 'item'}: {error}; upload a text, Markdown, HTML, PDF or DOCX file"
        ) from None
    if not text.strip():
        raise HintException("schema", f"{name or source} contains no extractable text (a scanned PDF needs OCR first)")
    return LoadedDocument(
        source=source, title=(item.get("title") or found_title or name or source)[:300], format=fmt, text=text
    )


def _upload(name: str, context: ToolContext) -> tuple[bytes, str, str, str]:
    """The caller's own upload ``name`` (datacatalog.access.own_uploads), else the file
    of that name in the tenant's folder. A colleague's upload is never found by name."""
    from datacatalog.access import own_uploads, upload_names
    from eunice.tenant_files import is_tenant_file

    tenant_id = context.tenant_id
    row = own_uploads(context).filter(filename=name).first()
    try:
        if row is not None and is_tenant_file(tenant_id, row.path):
            return _read(row.path), row.filename, row.mime_type, f"upload:{name}"
        path = files.resolve_upload(tenant_id, name)
    except files.UnsafePath as error:
        raise HintException("schema", f"upload: {error}") from None
    except FileNotFoundError:
        raise HintException(
            "schema",
            f"upload {name!r} does not exist in your uploads folder",
            _closest(name, upload_names(context)),
        ) from None
    return path.read_bytes(), path.name, "", f"upload:{name}"


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _generated(file_id: int, context: ToolContext, conversation_id: str | None) -> tuple[bytes, str, str, str]:
    from datacatalog.access import readable_files
    from eunice.tenant_files import is_tenant_file

    tenant_id = context.tenant_id
    row = readable_files(context).filter(pk=file_id).first()
    if row is None or not is_tenant_file(tenant_id, row.path):
        mine = readable_files(context)
        if conversation_id:
            mine = mine.filter(conversation_id=conversation_id)
        alternatives = [{"label": f"file_id {f.pk}: {f.filename}", "score": 0.5} for f in mine[:10]]
        raise HintException("schema", f"file_id {file_id} is not one of your files", alternatives)
    try:
        with open(row.path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise HintException("schema", f"file_id {file_id} ({row.filename}) is no longer on disk") from None
    return data, row.filename, row.mime_type, f"file:{row.pk}"


def _closest(name: str, known: list[str]) -> list[dict]:
    import difflib

    matches = difflib.get_close_matches(name, known, n=5, cutoff=0.3)
    return [
        {"label": match, "score": round(difflib.SequenceMatcher(None, name, match).ratio(), 3)} for match in matches
    ]
