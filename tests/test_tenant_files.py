"""Every file of a tenant lives under the one EUNICE_FILES_DIR, in directories no other tenant shares."""

import pytest

from eunice.tenant_files import (
    catalog_dir,
    is_tenant_file,
    new_generated_path,
    tenant_dir,
    uploads_dir,
    user_uploads_dir,
)

ODD_TENANTS = ("acme", "a b", "a_b", "../up", ".", "é-tenant", "x" * 200)


@pytest.fixture
def root(settings, tmp_path):
    settings.EUNICE_FILES_DIR = tmp_path / "files"
    return settings.EUNICE_FILES_DIR


def directories(tenant: str) -> list:
    return [
        catalog_dir(tenant),
        catalog_dir(tenant, "datasets", "conv-1"),
        catalog_dir(tenant, "exports"),
        tenant_dir(tenant),
        uploads_dir(tenant),
        user_uploads_dir(tenant, 7),
        new_generated_path(tenant, "report", "csv")[0].parent,
    ]


@pytest.mark.parametrize("tenant", ODD_TENANTS)
def test_every_directory_of_a_tenant_is_under_the_files_root(root, tenant):
    for directory in directories(tenant):
        assert directory.resolve().is_relative_to(root.resolve()), directory


def test_two_tenants_never_share_a_directory(root):
    roots = [(catalog_dir(tenant).resolve(), tenant_dir(tenant).resolve()) for tenant in ODD_TENANTS]
    flat = [path for pair in roots for path in pair]
    assert len(set(flat)) == len(flat)
    assert not any(a != b and a.is_relative_to(b) for a in flat for b in flat)


def test_a_file_is_the_tenants_only_inside_its_directories(root, tmp_path):
    export = catalog_dir("acme", "exports") / "sales.csv"
    generated, _ = new_generated_path("acme", "report", "md")
    upload = uploads_dir("acme") / "notes.txt"
    upload.parent.mkdir(parents=True)
    for path in (export, generated, upload):
        path.write_text("x")
        assert is_tenant_file("acme", str(path)) and not is_tenant_file("globex", str(path))
    outside = tmp_path / "secret.key"
    outside.write_text("k")
    (uploads_dir("acme") / "link.txt").symlink_to(outside)
    assert not is_tenant_file("acme", str(uploads_dir("acme") / "link.txt"))
    assert not is_tenant_file("acme", str(outside)) and not is_tenant_file("acme", str(uploads_dir("acme")))
