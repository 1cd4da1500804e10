"""Where a tenant's files live, for every app: all under ``EUNICE_FILES_DIR``.

Two trees per tenant, each named as it always was (files already on disk stay found):

- ``tenant_dir``: ``EUNICE_FILES_DIR/<tenant>/{uploads,users/<id>/uploads,generated}``.
  ``uploads/`` holds the tenant's own documents (put there by an operator, outside
  the app: every user of the tenant may index them); ``users/<id>/uploads/`` holds
  what a user uploaded through the API, recorded as GeneratedFile rows with their
  ``user`` (theirs alone, and their tenant's staff': datacatalog.access);
  ``generated/`` the documents tools write.
- ``catalog_dir``: ``EUNICE_FILES_DIR/<safe tenant>-<digest>/{datasets,exports}``, the
  conversation catalog's datasets and exported files.

Every path a tool reads or writes is resolved here and must stay inside its
tenant's directories: no absolute names, no ``..``, no symlink out (``is_tenant_file``).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path

from django.conf import settings

_SAFE_TENANT = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class UnsafePath(ValueError):
    """A file name that would leave the tenant's directory."""


def tenant_dir(tenant_id: str) -> Path:
    """The tenant's root directory (not created). Odd tenant ids are hashed, never used raw."""
    if _SAFE_TENANT.match(tenant_id) and tenant_id not in (".", ".."):
        name = tenant_id
    else:
        name = "t-" + hashlib.sha256(tenant_id.encode()).hexdigest()[:32]
    return Path(settings.EUNICE_FILES_DIR) / name


def catalog_dir(tenant_id: str, *parts: str) -> Path:
    """The catalog's directory of the tenant, or ``parts`` below it (created); a hash
    keeps any tenant id a safe, distinct path."""
    digest = hashlib.sha256(tenant_id.encode()).hexdigest()[:12]
    path = Path(settings.EUNICE_FILES_DIR) / f"{safe_name(tenant_id)[:40]}-{digest}"
    path = path.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def is_tenant_file(tenant_id: str, path: str) -> bool:
    """Whether ``path`` is an existing file inside one of the tenant's directories
    (the catalog's, or the uploads and generated files), links resolved.
    A path a tool result names is checked before it becomes a download: anything
    else on the server's disk (its secret key, the database) never does."""
    try:
        real = Path(path).resolve(strict=True)
    except (OSError, RuntimeError, ValueError):
        return False
    roots = (catalog_dir(tenant_id).resolve(), tenant_dir(tenant_id).resolve())
    return real.is_file() and any(real.is_relative_to(root) for root in roots)


def safe_name(name: str) -> str:
    """``name`` reduced to letters, digits, dot, dash and underscore (never empty, never a dot path)."""
    cleaned = _UNSAFE.sub("_", name).strip("._") or "file"
    return cleaned[:120]


def uploads_dir(tenant_id: str) -> Path:
    return tenant_dir(tenant_id) / "uploads"


def user_uploads_dir(tenant_id: str, user_pk: int) -> Path:
    """Where the API keeps one user's uploads (not created). Never inside ``uploads/``,
    so no upload name of the tenant's folder can reach it."""
    return tenant_dir(tenant_id) / "users" / str(int(user_pk)) / "uploads"


def resolve_upload(tenant_id: str, name: str) -> Path:
    """The path of upload ``name`` of the tenant. Raises UnsafePath, FileNotFoundError."""
    root = uploads_dir(tenant_id).resolve()
    relative = Path(name)
    if relative.is_absolute() or ".." in relative.parts or not name.strip():
        raise UnsafePath(f"upload names are relative to your uploads folder, without '..': {name!r}")
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        raise UnsafePath(f"{name!r} points outside your uploads folder")
    if not path.is_file():
        raise FileNotFoundError(name)
    return path


def list_uploads(tenant_id: str) -> list[str]:
    """Upload names of the tenant, sorted (empty when the folder does not exist)."""
    root = uploads_dir(tenant_id)
    if not root.is_dir():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def new_generated_path(tenant_id: str, title: str, extension: str) -> tuple[Path, str]:
    """A fresh path for a generated file and the file name a user sees. Creates the folder."""
    slug = _UNSAFE.sub("-", title).strip("-.")[:60] or "document"
    folder = tenant_dir(tenant_id) / "generated"
    folder.mkdir(parents=True, exist_ok=True)
    filename = f"{slug}.{extension}"
    return folder / f"{uuid.uuid4().hex[:12]}-{filename}", filename
