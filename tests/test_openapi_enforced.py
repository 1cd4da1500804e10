"""The OpenAPI document says what the server enforces, and the server enforces what it says."""

import re

import pytest
import yaml
from django.core.management import call_command
from rest_framework.test import APIClient

from eunice.openapi import ANY_TEXT, NON_BLANK_TEXT
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(tmp_path_factory, django_db_blocker):
    target = tmp_path_factory.mktemp("schema") / "schema.yaml"
    with django_db_blocker.unblock():
        call_command("spectacular", "--fail-on-warn", "--file", str(target))
    return yaml.safe_load(target.read_text())


def test_every_operation_documents_the_errors_it_answers_with_their_bodies(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert "default" not in responses, (method, path)
            for code in ("401", "403", "429"):
                assert responses[code]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/Error"
                }, (method, path, code)
            if "{" in path:
                assert "404" in responses, (method, path)
            if "requestBody" in operation:
                assert {"400", "415"} <= set(responses), (method, path)
    assert schema["components"]["schemas"]["Error"]["required"] == ["detail"]


def test_paging_bounds_strict_bodies_and_non_blank_text_are_in_the_schema(schema):
    parameters = {p["name"]: p["schema"] for p in schema["paths"]["/api/conversations/"]["get"]["parameters"]}
    assert (parameters["limit"]["minimum"], parameters["limit"]["maximum"]) == (1, 1000)
    assert parameters["offset"]["minimum"] == 0
    components = schema["components"]["schemas"]
    assert components["Conversation"]["additionalProperties"] is False
    text = components["PostMessageRequest"]["properties"]["text"]
    assert (text["minLength"], text["pattern"]) == (1, NON_BLANK_TEXT)
    body = schema["paths"]["/api/conversations/"]["post"]["requestBody"]["content"]
    assert list(body) == ["application/json"]  # what the server parses


def test_a_form_post_to_a_json_endpoint_is_refused_and_a_number_is_not_text(django_user_model):
    from registry.models import TenantMembership

    user = django_user_model.objects.create_user("ann")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    api = APIClient()
    api.force_authenticate(user)
    assert api.post("/api/conversations/", {"title": "x"}, format="multipart").status_code == 415
    refused = api.post("/api/conversations/", {"title": 0}, format="json")
    assert (refused.status_code, refused.json()) == (400, {"title": ["must be a string; got int"]})


def test_an_unrouted_api_url_is_a_json_404(client):
    response = client.get("/api/no-such-thing/")
    assert (response.status_code, response["Content-Type"]) == (404, "application/json")


@pytest.mark.parametrize("args", [None, "--flag", {"a": 1}])
def test_an_mcp_servers_args_are_a_list_of_strings_as_the_schema_says(django_user_model, schema, args):
    from registry.models import TenantMembership

    assert schema["components"]["schemas"]["MCPServer"]["properties"]["args"]["type"] == "array"
    user = django_user_model.objects.create_user("staff", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    api = APIClient()
    api.force_authenticate(user)
    refused = api.post("/api/mcp/servers/", {"name": "s", "transport": "stdio", "command": "x", "args": args})
    assert refused.status_code == 400 and "args" in refused.json()


def test_every_text_field_of_a_body_says_it_takes_no_nul_and_a_required_one_no_blank(schema):
    components = schema["components"]["schemas"]
    assert components["ApproveRequest"]["properties"]["args_hash"]["pattern"] == NON_BLANK_TEXT
    assert components["RejectRequest"]["properties"]["reason"]["pattern"] == ANY_TEXT
    assert components["PatchedMCPServerRequest"]["properties"]["args"]["items"]["pattern"] == ANY_TEXT


def test_an_upload_takes_its_file_as_a_file_part_of_the_types_the_server_reads(schema):
    for path, component in (
        ("/api/documents/", "DocumentUploadRequest"),
        ("/api/conversations/{conversation_id}/datasets/", "DatasetUploadRequest"),
    ):
        body = schema["paths"][path]["post"]["requestBody"]["content"]
        assert list(body) == ["multipart/form-data"]
        assert schema["components"]["schemas"][component]["properties"]["file"] == {
            "type": "string",
            "format": "binary",
        }
        assert schema["components"]["schemas"][component]["required"] == ["file"]
        assert "text/csv" in body["multipart/form-data"]["encoding"]["file"]["contentType"] or path == "/api/documents/"


def test_an_mcp_servers_body_is_one_shape_per_transport_each_with_what_it_needs(schema):
    components = schema["components"]["schemas"]
    body = components["MCPServerRequest"]
    assert body["discriminator"]["propertyName"] == "transport"
    stdio = components["StdioMCPServerRequest"]
    http = components["StreamableHttpMCPServerRequest"]
    assert {"command", "transport"} <= set(stdio["required"]) and "url" not in stdio["required"]
    assert {"url", "transport"} <= set(http["required"]) and "command" not in http["required"]
    assert stdio["properties"]["command"]["pattern"] == NON_BLANK_TEXT


def _staff_api(django_user_model):
    from registry.models import TenantMembership

    user = django_user_model.objects.create_user("staff", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    api = APIClient()
    api.force_authenticate(user)
    return api


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("http://name.invalid/mcp", 422),  # well formed; the host does not resolve
        ("http://127.0.0.1:9/mcp", 403),  # well formed; a loopback address
        ("ftp://example.com/", 400),  # breaks the schema's pattern
    ],
)
def test_a_refused_url_answers_400_only_for_what_the_schema_forbids(django_user_model, schema, url, status):
    pattern = re.compile(
        schema["components"]["schemas"]["StreamableHttpMCPServerRequest"]["properties"]["url"]["pattern"]
    )
    assert bool(pattern.search(url)) == (status != 400)
    answer = _staff_api(django_user_model).post(
        "/api/mcp/servers/", {"name": "s", "transport": "streamable_http", "url": url}, format="json"
    )
    assert answer.status_code == status and "url" in str(answer.json())
    assert str(status) in schema["paths"]["/api/mcp/servers/"]["post"]["responses"]


def test_a_file_part_without_a_known_suffix_is_named_by_its_content_type(django_user_model):
    from django.core.files.uploadedfile import SimpleUploadedFile

    api = _staff_api(django_user_model)
    blob = SimpleUploadedFile("blob", b"# Notes\n", content_type="text/markdown")
    answer = api.post("/api/documents/", {"file": blob}, format="multipart")
    assert (answer.status_code, answer.json()["name"]) == (201, "blob.md")
    for name, declared in (("blob", "image/png"), ("run.sh", "text/plain")):  # a suffix of its own decides
        refused = api.post(
            "/api/documents/", {"file": SimpleUploadedFile(name, b"x", content_type=declared)}, format="multipart"
        )
        assert refused.status_code == 400 and "not a document" in refused.json()["error"], name
