"""The OpenAPI document says what the server enforces, and the server enforces what it says."""

import pytest
import yaml
from django.core.management import call_command
from rest_framework.test import APIClient

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
                    "$ref": "#/components/schemas/Error"}, (method, path, code)
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
    text = components["PostMessage"]["properties"]["text"]
    assert (text["minLength"], text["pattern"]) == (1, r"\S")
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
