"""An upload or a document is its maker's (and their tenant's staff'); the tenant's folder is everyone's.

The cast: staff of tenant A, two plain users of A (ann and her colleague cole) and a
plain user of tenant B. Every path that lists, reads, indexes, searches, moves or
overwrites an upload or a document is tried by each of them.
"""

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from datacatalog.models import GeneratedFile
from registry.context import ToolContext
from registry.models import TenantMembership
from tests.conftest import OTHER_TENANT, TENANT
from tools.models import Document

pytestmark = pytest.mark.django_db(transaction=True)

ANNS = "# Ann's notes\n\nThe Brest wind park has fourteen turbines."
COLES = "# Cole's notes\n\nThe Grenoble dam stores eighty million cubic metres."


@pytest.fixture
def cast():
    def person(name, tenant, **flags):
        user = get_user_model().objects.create_user(name, **flags)
        TenantMembership.objects.create(user=user, tenant_id=tenant)
        return user

    return {
        "staff": person("staff_a", TENANT, is_staff=True),
        "ann": person("ann", TENANT),
        "cole": person("cole", TENANT),
        "bob": person("bob", OTHER_TENANT),
    }


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def upload(user, name: str, text: str):
    response = api(user).post("/api/documents/", {"file": SimpleUploadedFile(name, text.encode())}, format="multipart")
    assert response.status_code == 201, response.content
    return GeneratedFile.objects.filter(user=user, filename=name).get()


def read(row: GeneratedFile) -> str:
    return Path(row.path).read_text()


@pytest.fixture
def as_(cast, registry):
    """as_(who, tool, **inputs): run a tool as that member of the cast, in their tenant."""

    def run(who, tool_name, **inputs):
        user = cast[who]
        return registry.execute_tool(
            tool_name, inputs, ToolContext(tenant_id=user.tenant_membership.tenant_id, user_id=str(user.pk))
        )

    return run


@pytest.fixture
def indexed(cast, as_):
    """ann's and cole's uploads of the same name, each indexed by its owner into the shared corpus."""
    anns, coles = upload(cast["ann"], "notes.md", ANNS), upload(cast["cole"], "notes.md", COLES)
    assert as_("ann", "create_corpus", name="team").error is None
    assert as_("ann", "index_content", corpus="team", items=[{"upload": "notes.md"}]).error is None
    assert as_("cole", "index_content", corpus="team", items=[{"upload": "notes.md"}]).error is None
    return {
        "ann": Document.objects.get(owner=cast["ann"]),
        "cole": Document.objects.get(owner=cast["cole"]),
        "ann_file": anns,
        "cole_file": coles,
    }


def test_a_colleagues_upload_of_the_same_name_is_a_separate_file(cast):
    anns = upload(cast["ann"], "notes.md", ANNS)
    coles = upload(cast["cole"], "notes.md", COLES)

    assert anns.pk != coles.pk and read(anns) == ANNS and read(coles) == COLES
    again = upload(cast["ann"], "notes.md", ANNS + "\n\nRevised.")  # her own name again: replaces hers
    assert GeneratedFile.objects.filter(user=cast["ann"]).count() == 1 and read(again).endswith("Revised.")
    assert read(coles) == COLES


@pytest.mark.parametrize(("who", "listed"), [("ann", ["mine.md"]), ("cole", []), ("staff", []), ("bob", [])])
def test_the_upload_list_shows_only_your_own_uploads(cast, who, listed):
    upload(cast["ann"], "mine.md", ANNS)
    assert api(cast[who]).get("/api/documents/").json() == {"uploads": listed}


@pytest.mark.parametrize(("who", "status"), [("ann", 200), ("staff", 200), ("cole", 404), ("bob", 404)])
def test_an_upload_downloads_for_its_owner_and_the_tenants_staff_only(cast, who, status):
    anns = upload(cast["ann"], "mine.md", ANNS)
    response = api(cast[who]).get(f"/files/{anns.pk}/")
    response.close()
    assert response.status_code == status


def test_each_user_indexes_their_own_upload_and_neither_replaces_the_other(cast, indexed):
    assert indexed["ann"].text.startswith("# Ann's") and indexed["cole"].text.startswith("# Cole's")
    assert indexed["ann"].source == indexed["cole"].source == "upload:notes.md"


@pytest.mark.parametrize(("who", "found"), [("ann", True), ("staff", True), ("cole", False)])
def test_a_colleagues_upload_cannot_be_indexed_by_id(cast, as_, who, found):
    anns = upload(cast["ann"], "mine.md", ANNS)
    as_(who, "create_corpus", name="own")
    result = as_(who, "index_content", corpus="own", items=[{"file_id": anns.pk}])
    assert result.content.startswith("✓ ok") is found
    if not found:
        assert result.content.startswith(f"⚠ schema hint: file_id {anns.pk} is not one of your files")


def test_a_colleagues_upload_cannot_be_indexed_by_name(cast, as_):
    upload(cast["ann"], "only-ann.md", ANNS)
    as_("cole", "create_corpus", name="own")
    result = as_("cole", "index_content", corpus="own", items=[{"upload": "only-ann.md"}])
    assert result.content.startswith("⚠ schema hint: upload 'only-ann.md' does not exist")
    assert "only-ann" not in result.content.split("does not exist", 1)[1]  # no hint names her file


@pytest.mark.parametrize(
    ("who", "sees_ann", "sees_cole"),
    [("ann", True, False), ("cole", False, True), ("staff", True, True), ("bob", False, False)],
)
def test_search_finds_only_the_documents_you_may_read(as_, indexed, who, sees_ann, sees_cole):
    # Each document's own words, which the queries do not echo.
    for query, marker, expected in (
        ("wind park in Brest", "fourteen turbines", sees_ann),
        ("the dam at Grenoble", "eighty million", sees_cole),
    ):
        result = as_(who, "search_documents", query=query)
        assert (marker in result.content) is expected, (who, query, result.content[:300])


@pytest.mark.parametrize(("who", "readable"), [("ann", True), ("staff", True), ("cole", False), ("bob", False)])
def test_a_document_is_read_and_moved_only_by_its_owner_and_staff(as_, indexed, who, readable):
    ann_doc = indexed["ann"]
    text = as_(who, "get_document_text", document_id=ann_doc.pk)
    assert ("fourteen turbines" in text.content) is readable
    as_(who, "create_corpus", name=f"moved-{who}")
    moved = as_(who, "move_documents", document_ids=[ann_doc.pk], to_corpus=f"moved-{who}")
    assert moved.content.startswith("✓ ok") is readable
    if not readable:
        assert f"document_id {ann_doc.pk} is not one of your documents" in moved.content
        assert "fourteen" not in text.content and "Brest" not in moved.content


def test_a_corpus_counts_only_the_documents_you_may_read(as_, indexed):
    assert "1 document(s)" in as_("cole", "create_corpus", name="team").content
    assert "2 document(s)" in as_("staff", "create_corpus", name="team").content


def test_the_tenants_folder_is_indexed_by_every_user_of_the_tenant(files_dir, as_):
    shared = files_dir / TENANT / "uploads" / "handbook.md"
    shared.parent.mkdir(parents=True, exist_ok=True)
    shared.write_text("# Handbook\n\nEveryone reads the handbook.")
    for who in ("ann", "cole"):
        as_(who, "create_corpus", name=f"c-{who}")
        assert as_(who, "index_content", corpus=f"c-{who}", items=[{"upload": "handbook.md"}]).error is None
    as_("bob", "create_corpus", name="c-bob")
    refused = as_("bob", "index_content", corpus="c-bob", items=[{"upload": "handbook.md"}])
    assert refused.content.startswith("⚠ schema hint: upload 'handbook.md' does not exist")
