"""The open Agent Skills format: a folder with ``SKILL.md``, scripts and assets.

``SKILL.md`` starts with YAML frontmatter between ``---`` lines (``name`` and
``description`` required; ``license``, ``compatibility``, ``metadata`` and
``allowed-tools`` optional), then the instructions in Markdown. ``name`` is
1-64 lower-case letters, digits and single hyphens, and is the folder's name.

This module reads and writes such a folder as a zip, bounded (the archive
limits of ``eunice.bounded_read``, plus a file count and size of its own) and
never with a path outside the folder, and gives the content hash an approval
binds to: it covers every file's path and bytes. Pure: no Django models.
"""

from __future__ import annotations

import hashlib
import io
import re
import stat
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import yaml

from eunice.bounded_read import check_zip

MANIFEST = "SKILL.md"
NAME_RULE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_FRONTMATTER_BYTES = 16 * 1024
MAX_MANIFEST_BYTES = 256 * 1024
MAX_FILES = 200
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024
MAX_PATH = 255
OPTIONAL_FIELDS = frozenset({"license", "compatibility", "metadata", "allowed-tools"})


class SkillFormatError(ValueError):
    """A skill folder or archive breaks a rule; the message names the file or field and the rule."""


@dataclass(frozen=True)
class Manifest:
    name: str
    description: str
    instructions: str
    license: str = ""
    compatibility: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    allowed_tools: tuple[str, ...] = ()


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader without anchors and aliases: a few bytes of aliases can expand to gigabytes."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise SkillFormatError(f"{MANIFEST}: frontmatter may not use YAML aliases")
        event = self.peek_event()
        if getattr(event, "anchor", None):
            raise SkillFormatError(f"{MANIFEST}: frontmatter may not use YAML anchors")
        return super().compose_node(parent, index)


def parse_manifest(text: str) -> Manifest:
    """The frontmatter and instructions of a ``SKILL.md``. Raises SkillFormatError naming the field."""
    if len(text.encode()) > MAX_MANIFEST_BYTES:
        raise SkillFormatError(f"{MANIFEST} is larger than {MAX_MANIFEST_BYTES:,} bytes")
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillFormatError(f"{MANIFEST} must start with YAML frontmatter between '---' lines")
    try:
        end = next(n for n, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        raise SkillFormatError(f"{MANIFEST}: the frontmatter has no closing '---' line") from None
    front = "".join(lines[1:end])
    if len(front.encode()) > MAX_FRONTMATTER_BYTES:
        raise SkillFormatError(f"{MANIFEST}: the frontmatter is larger than {MAX_FRONTMATTER_BYTES:,} bytes")
    try:
        data = yaml.load(front, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader without aliases
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise SkillFormatError(f"{MANIFEST}: the frontmatter is not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise SkillFormatError(f"{MANIFEST}: the frontmatter must be a mapping of fields")
    unknown = sorted(str(key) for key in data if key not in OPTIONAL_FIELDS | {"name", "description"})
    if unknown:
        raise SkillFormatError(f"{MANIFEST}: unknown frontmatter field {unknown[0]!r} (put extra fields in metadata)")
    name = _text(data, "name", MAX_NAME, required=True)
    if not NAME_RULE.match(name):
        raise SkillFormatError(
            f"{MANIFEST}: name {name!r} must be lower-case letters, digits and single hyphens, "
            "not starting or ending with a hyphen"
        )
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, (str, int, float, bool)) for v in metadata.values()):
        raise SkillFormatError(f"{MANIFEST}: metadata must map names to plain values")
    tools = data.get("allowed-tools") or ""
    if not isinstance(tools, str):
        raise SkillFormatError(f"{MANIFEST}: allowed-tools must be a space-separated string")
    return Manifest(
        name=name,
        description=_text(data, "description", MAX_DESCRIPTION, required=True),
        instructions="".join(lines[end + 1 :]).strip(),
        license=_text(data, "license", 200),
        compatibility=_text(data, "compatibility", MAX_COMPATIBILITY),
        metadata={str(k): str(v) for k, v in metadata.items()},
        allowed_tools=tuple(tools.split()),
    )


def render_manifest(manifest: Manifest) -> str:
    """``SKILL.md`` text for ``manifest``; ``parse_manifest`` reads it back to an equal Manifest."""
    front: dict[str, Any] = {"name": manifest.name, "description": manifest.description}
    for key, value in (("license", manifest.license), ("compatibility", manifest.compatibility)):
        if value:
            front[key] = value
    if manifest.metadata:
        front["metadata"] = dict(manifest.metadata)
    if manifest.allowed_tools:
        front["allowed-tools"] = " ".join(manifest.allowed_tools)
    header = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000)
    text = f"---\n{header}---\n{manifest.instructions.strip()}\n"
    parse_manifest(text)  # the same rules as a folder made by hand
    return text


def _text(data: dict, key: str, longest: int, *, required: bool = False) -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise SkillFormatError(f"{MANIFEST}: the frontmatter needs {key!r}")
        return ""
    if not isinstance(value, str) or not value.strip():
        raise SkillFormatError(f"{MANIFEST}: {key} must be non-empty text")
    if len(value) > longest:
        raise SkillFormatError(f"{MANIFEST}: {key} is longer than {longest} characters")
    return value.strip()


def check_path(path: str) -> str:
    """``path`` as a clean relative POSIX path inside the folder. Raises SkillFormatError."""
    if not path or len(path) > MAX_PATH or "\\" in path or "\x00" in path:
        raise SkillFormatError(f"file path {path[:80]!r} is empty, too long or has a backslash or NUL")
    pure = PurePosixPath(path)
    if pure.is_absolute() or any(part in ("", ".", "..") for part in path.split("/")):
        raise SkillFormatError(f"file path {path[:80]!r} leaves the skill folder or is not normalised")
    return str(pure)


@dataclass(frozen=True)
class SkillFolder:
    """A skill's files by relative path; ``SKILL.md`` among them."""

    files: Mapping[str, bytes]

    def __post_init__(self) -> None:
        if MANIFEST not in self.files:
            raise SkillFormatError(f"a skill folder needs {MANIFEST} at its top")
        if len(self.files) > MAX_FILES:
            raise SkillFormatError(f"a skill folder holds at most {MAX_FILES} files, not {len(self.files)}")
        total = 0
        for path, data in self.files.items():
            check_path(path)
            if len(data) > MAX_FILE_BYTES:
                raise SkillFormatError(f"{path} is larger than {MAX_FILE_BYTES:,} bytes")
            total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise SkillFormatError(f"the skill's files add up to more than {MAX_TOTAL_BYTES:,} bytes")

    @property
    def manifest(self) -> Manifest:
        try:
            text = self.files[MANIFEST].decode("utf-8")
        except UnicodeDecodeError:
            raise SkillFormatError(f"{MANIFEST} is not UTF-8 text") from None
        return parse_manifest(text)

    def content_hash(self) -> str:
        """SHA-256 over every file's path and bytes, in path order: what an approval binds to."""
        digest = hashlib.sha256()
        for path in sorted(self.files):
            encoded = path.encode()
            digest.update(len(encoded).to_bytes(4, "big") + encoded)
            digest.update(hashlib.sha256(self.files[path]).digest())
        return digest.hexdigest()

    def to_zip(self) -> bytes:
        """The folder as a zip whose top directory is the skill's name; the same files give the same bytes."""
        name = self.manifest.name
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(self.files):
                info = zipfile.ZipInfo(f"{name}/{path}", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                archive.writestr(info, self.files[path])
        return buffer.getvalue()


# Archive hashes kept, by the SHA-256 of the archive's bytes: a few dozen bytes each.
ARCHIVE_HASHES_KEPT = 4096
_archive_hashes: dict[bytes, str] = {}


def archive_hash(data: bytes) -> str:
    """``from_zip(data).content_hash()``, worked out once per process for the same bytes.

    Every model call checks the tenant's resident skills against their approval
    (``Capability.is_usable``); unzipping and hashing one took about 350 µs where
    hashing its bytes takes 1. The key is the SHA-256 of the bytes, so changed
    bytes (a bulk update of the row included) are unzipped and checked anew;
    an archive that breaks the format raises SkillFormatError every time.
    """
    key = hashlib.sha256(data).digest()
    known = _archive_hashes.get(key)
    if known is None:
        known = from_zip(data).content_hash()
        if len(_archive_hashes) >= ARCHIVE_HASHES_KEPT:
            _archive_hashes.clear()
        _archive_hashes[key] = known
    return known


def known_archive_hash(digest: bytes) -> str | None:
    """The content hash ``archive_hash`` worked out for the bytes whose SHA-256 is ``digest``,
    if this process has; None if not."""
    return _archive_hashes.get(digest)


def from_zip(data: bytes) -> SkillFolder:
    """A skill folder from a zip: ``SKILL.md`` at the top or in one top directory named like the skill.

    Bounded before anything is inflated (``check_zip``); refuses links, paths outside
    the folder and more files or bytes than a skill may hold. Raises SkillFormatError
    (or ``InputTooLarge``, a ValueError, from the archive limits).
    """
    try:
        archive = check_zip(data, what="the skill archive")
    except zipfile.BadZipFile:
        raise SkillFormatError("the skill archive is not a zip file") from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > MAX_FILES:
            raise SkillFormatError(f"a skill folder holds at most {MAX_FILES} files, not {len(members)}")
        for member in members:
            check_path(member.filename)
            if stat.S_ISLNK(member.external_attr >> 16):
                raise SkillFormatError(f"{member.filename[:80]!r} is a link; a skill holds plain files only")
            if member.file_size > MAX_FILE_BYTES:
                raise SkillFormatError(f"{member.filename[:80]} is larger than {MAX_FILE_BYTES:,} bytes")
        prefix = _top_directory([m.filename for m in members])
        files = {m.filename[len(prefix) :]: archive.read(m) for m in members}
    folder = SkillFolder(files)
    if prefix and prefix.rstrip("/") != folder.manifest.name:
        raise SkillFormatError(
            f"the archive's folder {prefix.rstrip('/')!r} is not the skill's name {folder.manifest.name!r}"
        )
    return folder


def _top_directory(paths: list[str]) -> str:
    """``"name/"`` when every path is under one top directory that holds SKILL.md, else ``""``."""
    if MANIFEST in paths:
        return ""
    tops = {path.split("/", 1)[0] for path in paths}
    if len(tops) == 1 and all("/" in path for path in paths):
        top = f"{tops.pop()}/"
        if f"{top}{MANIFEST}" in paths:
            return top
    raise SkillFormatError(f"the archive has no {MANIFEST} at its top or in one top folder")
