"""An archive that declares more than it may inflate to — by ratio, by total, by members, by a
compression method zipfile cannot bound — is refused before a reader opens it, naming the
limit: xlsx uploads, workbooks for manipulate_excel, and Parquet whose dictionary pages
decode to far more than they hold."""

import time
import zipfile

import pytest

from datacatalog.files import register_export
from datacatalog.uploads import EXCEL_MIME
from tests.conftest import TENANT
from tests.data.test_uploads_and_downloads_over_rest import upload
from tests.hostile_files import bz2_office, office_bomb, parquet_dictionary_bomb

pytestmark = pytest.mark.django_db(transaction=True)

MB = 1 << 20


def refused(response, variable: str) -> str:
    assert response.status_code == 400, response.json()
    assert variable in response.json()["error"], response.json()["error"]
    return response.json()["error"]


@pytest.mark.parametrize("padding", [2 * MB, 420 * MB])
def test_a_workbook_inflating_a_thousandfold_is_refused_at_once(ann, conversation, padding):
    bomb = office_bomb("xlsx", padding)
    ann.get(f"/api/conversations/{conversation.id}/datasets/")  # the process's first request loads the API
    started = time.monotonic()
    error = refused(upload(ann, conversation.id, "bomb.xlsx", bomb), "EUNICE_ARCHIVE_MAX_RATIO")
    assert "xl/worksheets/sheet1.xml" in error and "the limit is 100 to 1" in error
    assert time.monotonic() - started < 5


def test_a_workbook_over_the_uncompressed_total_is_refused(ann, conversation, settings):
    settings.INPUT_LIMITS = {**settings.INPUT_LIMITS, "ARCHIVE_MAX_BYTES": 1 * MB}
    refused(upload(ann, conversation.id, "noisy.xlsx", office_bomb("xlsx", 0, noise=2 * MB)), "EUNICE_ARCHIVE_MAX_MB")


def test_a_workbook_of_too_many_members_is_refused(ann, conversation, settings):
    settings.INPUT_LIMITS = {**settings.INPUT_LIMITS, "ARCHIVE_MAX_MEMBERS": 20}
    refused(
        upload(ann, conversation.id, "many.xlsx", office_bomb("xlsx", 0, extra_members=30)),
        "EUNICE_ARCHIVE_MAX_MEMBERS",
    )


def test_a_member_compressed_with_a_method_zipfile_does_not_bound_is_refused(ann, conversation):
    response = upload(ann, conversation.id, "bz2.xlsx", bz2_office("xlsx"))
    assert response.status_code == 400 and "only stored and deflated members are read" in response.json()["error"]


def test_a_workbook_within_the_limits_is_still_read(ann, conversation):
    response = upload(ann, conversation.id, "padded.xlsx", office_bomb("xlsx", 512 * 1024))  # under the ratio floor
    assert response.status_code == 201 and response.json()["rows"] == 1


def test_manipulate_excel_refuses_a_bomb_among_the_tenants_files(conversation, in_conversation):
    generated = register_export(
        TENANT, conversation.id, "bomb.xlsx", office_bomb("xlsx", 2 * MB), EXCEL_MIME, source_tool="upload"
    )
    result = in_conversation("manipulate_excel", file_id=generated["file_id"])
    assert result.content.startswith("⚠ schema hint") and "EUNICE_ARCHIVE_MAX_RATIO" in result.content


def test_a_parquet_file_decoding_to_more_than_the_limit_is_refused(ann, conversation, settings):
    settings.INPUT_LIMITS = {**settings.INPUT_LIMITS, "MAX_DECODED_BYTES": 16 * MB}
    bomb = parquet_dictionary_bomb(rows=2_000, value_bytes=10_000)  # a few kB; 20 MB decoded
    assert len(bomb) < 100_000
    refused(upload(ann, conversation.id, "bomb.parquet", bomb), "EUNICE_DATASET_MAX_MB")
    small = parquet_dictionary_bomb(rows=100, value_bytes=10_000)
    assert upload(ann, conversation.id, "fine.parquet", small).status_code == 201


def test_the_bomb_files_are_what_they_claim():
    """The fixtures themselves: small on the wire, large as declared (so the refusals above mean something)."""
    bomb = office_bomb("xlsx", 20 * MB)
    with zipfile.ZipFile(__import__("io").BytesIO(bomb)) as archive:
        sheet = archive.getinfo("xl/worksheets/sheet1.xml")
    assert len(bomb) < 100_000 and sheet.file_size > 20 * MB
