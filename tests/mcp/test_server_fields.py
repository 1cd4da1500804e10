"""A server's args and idempotent_tools are lists of strings: the API, the schema and the model say so."""

import sys

import pytest
import yaml
from django.core.exceptions import ValidationError

from registry.mcp import services
from registry.mcp.services import Operator
from tests.mcp.test_security import client_for

pytestmark = pytest.mark.django_db(transaction=True)


def create(api, **fields):
    body = {"name": "demo", "transport": "stdio", "command": sys.executable, **fields}
    return api.post("/api/mcp/servers/", body, format="json")


def test_args_given_as_one_string_are_a_400_naming_the_field():
    response = create(client_for("sam", staff=True), args="a b")
    assert response.status_code == 400
    assert "args" in response.json() and "list" in str(response.json()["args"]).lower()


def test_idempotent_tools_given_as_one_string_are_a_400_naming_the_field():
    response = create(client_for("sam", staff=True), args=[], idempotent_tools="add")
    assert response.status_code == 400 and "idempotent_tools" in response.json()


def test_args_as_a_list_are_stored_as_given():
    response = create(client_for("sam", staff=True), args=["-m", "mcp server"])
    assert response.status_code == 201 and response.json()["args"] == ["-m", "mcp server"]


def test_the_model_refuses_a_string_for_args_whoever_calls():
    with pytest.raises(ValidationError) as refused:
        services.create_server(
            acting_user=Operator(), tenant_id="acme", name="demo", transport="stdio", command=sys.executable, args="a b"
        )
    assert "args" in refused.value.message_dict
    assert "must be a list of strings" in refused.value.message_dict["args"][0]


def test_the_openapi_schema_types_args_as_a_list_of_strings():
    schema = yaml.safe_load(client_for("ann").get("/api/schema/").content)
    args = schema["components"]["schemas"]["MCPServer"]["properties"]["args"]
    assert args["type"] == "array" and args["items"]["type"] == "string"
