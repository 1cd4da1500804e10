"""Turning an uploaded file (CSV, Excel, Parquet or GeoParquet, JSON or GeoJSON) into a catalog dataset."""

from __future__ import annotations

import zipfile
from pathlib import PurePath
from typing import TYPE_CHECKING

from django.conf import settings

from datacatalog.files import register_export
from datacatalog.models import CatalogDataset
from datacatalog.store import CatalogError, ConversationCatalog
from eunice.bounded_read import InputTooLarge, read_table
from eunice.tenant_files import safe_name

if TYPE_CHECKING:
    import pandas as pd

FORMATS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".xlsx": "excel",
    ".parquet": "parquet",
    ".json": "json",
    ".geojson": "json",
}
EXCEL_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


class UploadError(CatalogError):
    """The file cannot become a dataset; the message names the file and the rule."""


def upload_dataset(
    catalog: ConversationCatalog, filename: str, payload: bytes, *, name: str | None = None
) -> CatalogDataset:
    """Parse ``payload`` by its extension and save it as ``name`` (default: the file's stem).

    An Excel upload is also kept as a file, so manipulate_excel can edit it.
    Raises UploadError (size, extension, unreadable or empty file) or CatalogError (bad name).
    """
    limit = settings.DATA["UPLOAD_MAX_BYTES"]
    if len(payload) > limit:
        raise UploadError(
            f"{filename!r} is {len(payload):,} bytes; the upload limit is {limit:,} (EUNICE_UPLOAD_MAX_MB)"
        )
    suffix = PurePath(filename).suffix.lower()
    kind = FORMATS.get(suffix)
    if kind is None:
        raise UploadError(f"{filename!r}: unsupported file type {suffix or '(none)'}; use {', '.join(sorted(FORMATS))}")
    frame = parse(kind, payload, filename)
    if frame.empty and not len(frame.columns):
        raise UploadError(f"{filename!r} holds no columns")
    dataset_name = name or _stem_name(filename)
    entry = catalog.save(dataset_name, frame, source="upload", source_detail=filename)
    if kind == "excel":
        register_export(catalog.tenant_id, catalog.conversation_id, filename, payload, EXCEL_MIME, source_tool="upload")
    return entry


def parse(kind: str, payload: bytes, filename: str) -> pd.DataFrame:
    """Read ``payload`` as ``kind`` within the dataset limits (eunice.bounded_read); raises
    UploadError with the limit or the reader's reason (no traceback)."""
    import pandas as pd

    sep = "\t" if filename.lower().endswith(".tsv") else ","
    try:
        return _with_geometry(kind, payload, read_table(kind, payload, sep=sep))
    except InputTooLarge as exc:
        raise UploadError(f"{filename!r} is refused: {exc}") from None
    except pd.errors.EmptyDataError:
        raise UploadError(f"{filename!r} is empty") from None
    # SyntaxError: what XML parsers raise for a broken sheet (ElementTree's ParseError, lxml's).
    except (ValueError, pd.errors.ParserError, zipfile.BadZipFile, OSError, KeyError, SyntaxError) as exc:
        raise UploadError(f"{filename!r} is not a readable {kind} file: {_reason(exc)}") from None


def _with_geometry(kind: str, payload: bytes, frame: pd.DataFrame) -> pd.DataFrame:
    """GeoJSON features and GeoParquet geometries as a ``geometry`` column of WKT in EPSG:4326."""
    from datacatalog import geofiles

    if kind == "json" and geofiles.is_geojson(frame):
        return geofiles.from_geojson(frame)
    if kind == "parquet" and geofiles.is_geoparquet(payload):
        return geofiles.from_geoparquet(payload)
    return frame


def _reason(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def _stem_name(filename: str) -> str:
    stem = safe_name(PurePath(filename).stem).replace("-", "_").replace(".", "_").lower()
    if not stem[:1].isalpha() and not stem.startswith("_"):
        stem = f"t_{stem}"
    return stem[:64]
