"""REST: upload a file into a conversation's catalog; download an exported file (owning tenant only)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from datacatalog.store import ConversationCatalog
from datacatalog.uploads import EXCEL_MIME as EXCEL
from tests.conftest import OTHER_TENANT, TENANT
from tests.data.conftest import SALES_CSV, client_for

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bob(django_user_model):
    """Ann's colleague: the same tenant, not the conversation's owner."""
    return client_for(django_user_model, "bob", TENANT)


@pytest.fixture
def greg(django_user_model):
    return client_for(django_user_model, "greg", OTHER_TENANT)


def upload(client, conversation_id, filename, payload, /, **extra):
    return client.post(
        f"/api/conversations/{conversation_id}/datasets/",
        {"file": SimpleUploadedFile(filename, payload), **extra},
        format="multipart",
    )


def _excel() -> bytes:
    buffer = io.BytesIO()
    pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}).to_excel(buffer, index=False)
    return buffer.getvalue()


def _parquet() -> bytes:
    buffer = io.BytesIO()
    pd.DataFrame({"a": [1.5]}).to_parquet(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "name,payload,rows",
    [
        ("Sales 2024.csv", SALES_CSV, 5),
        ("book.xlsx", _excel(), 2),
        ("numbers.parquet", _parquet(), 1),
        ("people.json", b'{"rows": [{"name": "Ada", "address": {"city": "London"}}]}', 1),
    ],
)
def test_each_supported_format_becomes_a_dataset(ann, conversation, name, payload, rows):
    response = upload(ann, conversation.id, name, payload)
    assert response.status_code == 201, response.json()
    assert response.json()["rows"] == rows
    listed = ann.get(f"/api/conversations/{conversation.id}/datasets/").json()["datasets"]
    assert [d["name"] for d in listed] == [response.json()["name"]]


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as container:
        for member, payload in members.items():
            container.writestr(member, payload)
    return buffer.getvalue()


def test_a_workbook_named_zip_by_its_sender_is_read_as_the_workbook_it_declares(ann, conversation):
    """Tools that name a file by its first bytes call an .xlsx a .zip (schemathesis does)."""
    workbook = SimpleUploadedFile("file.zip", _excel(), content_type=EXCEL)
    response = ann.post(f"/api/conversations/{conversation.id}/datasets/", {"file": workbook}, format="multipart")
    assert (response.status_code, response.json()["name"], response.json()["rows"]) == (201, "file", 2)


@pytest.mark.parametrize(
    "payload,declared",
    [
        (_zip({"notes.txt": b"hello"}), EXCEL),  # a zip, but no workbook inside
        (b"not a zip at all", EXCEL),
        (_excel(), "application/zip"),  # a workbook that does not say so
    ],
)
def test_a_zip_that_is_not_the_workbook_it_declares_stays_refused(ann, conversation, payload, declared):
    part = SimpleUploadedFile("file.zip", payload, content_type=declared)
    response = ann.post(f"/api/conversations/{conversation.id}/datasets/", {"file": part}, format="multipart")
    assert response.status_code == 400 and "'file.zip'" in response.json()["error"]
    assert ConversationCatalog(TENANT, conversation.id).names() == []


def test_the_dataset_name_can_be_chosen(ann, conversation):
    assert upload(ann, conversation.id, "x.csv", SALES_CSV, name="q1").json()["name"] == "q1"


def test_a_bad_file_gets_a_clear_error(ann, conversation):
    response = upload(ann, conversation.id, "broken.xlsx", b"not a zip")
    assert response.status_code == 400
    assert "'broken.xlsx' is not a readable excel file" in response.json()["error"]


def test_an_unsupported_type_names_the_supported_ones(ann, conversation):
    response = upload(ann, conversation.id, "notes.txt", b"hello")
    assert response.status_code == 400 and ".csv" in response.json()["error"]


def test_a_file_over_the_cap_is_refused(ann, conversation, settings):
    settings.DATA = {**settings.DATA, "UPLOAD_MAX_BYTES": 10}
    response = upload(ann, conversation.id, "sales.csv", SALES_CSV)
    assert response.status_code == 413 and "upload limit" in response.json()["error"]


def test_another_tenant_cannot_upload_to_or_list_the_conversation(greg, conversation):
    assert upload(greg, conversation.id, "sales.csv", SALES_CSV).status_code == 404
    assert greg.get(f"/api/conversations/{conversation.id}/datasets/").status_code == 404
    assert ConversationCatalog(TENANT, conversation.id).names() == []


def test_a_colleague_in_the_same_tenant_cannot_upload_to_or_list_the_conversation(ann, bob, conversation):
    assert upload(bob, conversation.id, "sales.csv", SALES_CSV).status_code == 404
    assert bob.get(f"/api/conversations/{conversation.id}/datasets/").status_code == 404
    assert ConversationCatalog(TENANT, conversation.id).names() == []


def test_an_anonymous_caller_gets_nothing(conversation):
    assert APIClient().get(f"/api/conversations/{conversation.id}/datasets/").status_code in (401, 403)


def test_a_download_is_served_only_to_the_owning_tenant(ann, greg, sales, in_conversation):
    url = in_conversation("export", dataset="sales").cards[0]["url"]
    response = ann.get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content).startswith(b"region,product")
    assert greg.get(url).status_code == 404
    assert APIClient().get(url).status_code in (401, 403)


def status_of(client, url) -> int:
    response = client.get(url)
    response.close()  # a served file's handle is closed with its response
    return response.status_code


def test_a_file_made_in_a_conversation_is_only_its_owners(ann, bob, sales, in_conversation):
    url = in_conversation("export", dataset="sales").cards[0]["url"]
    assert (status_of(ann, url), status_of(bob, url)) == (200, 404)


def test_a_stored_file_row_pointing_outside_the_tenants_files_is_not_served(ann, sales, in_conversation):
    from datacatalog.models import GeneratedFile

    url = in_conversation("export", dataset="sales").cards[0]["url"]
    GeneratedFile.objects.update(path=str(ROOT / "manage.py"))
    assert status_of(ann, url) == 404


def test_a_file_made_outside_a_conversation_is_its_tenants(ann, bob, sales, in_conversation):
    from datacatalog.models import GeneratedFile

    url = in_conversation("export", dataset="sales").cards[0]["url"]
    GeneratedFile.objects.update(conversation=None)
    assert status_of(bob, url) == 200


def test_a_spreadsheet_column_of_numbers_and_text_is_kept_as_text(ann, conversation):
    sheet = io.BytesIO()
    pd.DataFrame({"code": [7, "A-1", None], "n": [1, 2, 3]}).to_excel(sheet, index=False)
    answer = upload(ann, conversation.id, "codes.xlsx", sheet.getvalue())
    assert answer.status_code == 201, answer.content
    stored = ConversationCatalog(TENANT, conversation.id).load("codes")
    assert stored["code"].tolist()[:2] == ["7", "A-1"] and pd.isna(stored["code"].tolist()[2])
    assert stored["n"].tolist() == [1, 2, 3]
