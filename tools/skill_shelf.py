"""The tenant's skills as the model comes across them before loading one: named in every
call's state block (``resident``) and found by meaning beside the tools ``search_tools``
ranks (``find``). Only skills usable as they are now (approved, unchanged since) are
ever named; the instructions still come only with ``use_skill``.
"""

from __future__ import annotations

from django.db.models import Count, Max, QuerySet

from eunice.db.prepared import Prepared
from registry.retrieval import ToolDocument
from tools.lib.hybrid import MIN_SIMILARITY, IndexCache, as_document, build_index, embed_missing
from tools.lib.skill_format import known_archive_hash
from tools.models import CapabilityStatus, Skill

_INDEXES = IndexCache()
# (pk, name, description, status, approved_hash, archive_sha256) of a skill approved at some hash
_Approved = tuple[int, str, str, str, str, bytes | memoryview]
_RESIDENT: dict[int, Prepared[_Approved]] = {}  # by how many rows it checks; composed once (every turn reads it)


def clear_cache() -> None:
    _INDEXES.clear()


def resident(tenant_id: str, limit: int) -> list[tuple[str, str]]:
    """Up to ``limit`` (name, description) of the tenant's usable skills, by name. Checks at
    most ``2 * limit`` approved rows, so a shelf of stale approvals stays cheap.

    Reads each row's ``archive_sha256`` (the database's SHA-256 of the archive as it is
    now) in place of the archive: a skill whose archive this process has hashed before is
    checked against its approval without its bytes; any other is read and checked whole
    (``Skill.is_usable``), which keeps its content hash for the next turn."""
    read = _RESIDENT.get(limit)
    if read is None:
        read = _RESIDENT[limit] = Prepared(
            lambda tenant: (
                Skill.objects.usable()
                .filter(tenant_id=tenant)
                .values_list("pk", "name", "description", "status", "approved_hash", "archive_sha256")[: 2 * limit]
            )
        )
    return [
        (name, description)
        for pk, name, description, status, approved, digest in read(tenant_id)
        if _approved_as_it_is(pk, status, approved, digest)
    ][:limit]


def usable(rows: QuerySet[Skill]) -> list[Skill]:
    """The skills among ``rows`` usable as they are now, like ``Skill.is_usable`` but read
    without their archives (``archive`` deferred), as ``resident`` checks them."""
    return [
        skill
        for skill in rows.defer("archive")
        if _approved_as_it_is(skill.pk, skill.status, skill.approved_hash, skill.archive_sha256)
    ]


def _approved_as_it_is(pk: int, status: str, approved_hash: str, digest: bytes | memoryview) -> bool:
    """``Skill.is_usable`` of the row ``pk`` from these of its columns, by the content hash
    this process worked out for the archive's bytes; the row read whole if there is none."""
    if status != CapabilityStatus.APPROVED or not approved_hash:
        return False
    known = known_archive_hash(bytes(digest))
    if known is not None:
        return known == approved_hash
    skill = Skill.objects.filter(pk=pk).first()
    return skill is not None and skill.is_usable()


def find(tenant_id: str, query: str, limit: int) -> list[tuple[str, str]]:
    """The tenant's usable skills (name, description) that match ``query`` by meaning, best
    first. One aggregate query when the tenant has none; the index is rebuilt only when an
    approval, a change or a new skill moves the fingerprint."""
    approved = Skill.objects.usable().filter(tenant_id=tenant_id)
    fingerprint = tuple(approved.aggregate(n=Count("id"), last=Max("id"), changed=Max("updated_at")).values())
    if not fingerprint[0]:
        return []
    index, by_key = _INDEXES.get(tenant_id, fingerprint, lambda: _build(tenant_id))
    if not by_key:
        return []
    return [by_key[hit.key] for hit in index.search(query, limit, min_similarity=MIN_SIMILARITY, scope=tenant_id)]


def document(skill: Skill) -> ToolDocument:
    """How a skill reads to the search encoders, in this index and in search_catalog's."""
    return as_document(f"skill:{skill.pk}", skill.name, skill.description)


def _build(tenant_id: str) -> tuple:
    skills = usable(Skill.objects.usable().filter(tenant_id=tenant_id))
    documents = [document(skill) for skill in skills]
    vectors, _ = embed_missing(documents, {})
    return build_index(documents, vectors), {f"skill:{s.pk}": (s.name, s.description) for s in skills}
