"""A person attaches a resource of one of their tenant's servers to a message: the chat page
lists the resources, and one is read as delimited text for the composer."""

import pytest

from tests.conftest import OTHER_TENANT
from tests.mcp.conftest import add_server
from tests.mcp.test_security import client_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo():
    return add_server()


def test_the_tenants_resources_are_listed_for_attaching(demo):
    listed = client_for("ann").get("/api/mcp/resources/").json()
    assert [(r["server"], r["uri"], r["title"]) for r in listed["resources"]] == [
        ("demo", "demo://readme", "Read me"),
        ("demo", "demo://logo", ""),
    ]
    assert listed["unavailable"] == {}


def test_a_text_resource_is_attached_whole_between_markers(demo):
    answer = client_for("ann").post("/api/mcp/resources/attach/", {"server": "demo", "uri": "demo://readme"})
    assert answer.json() == {
        "text": "[attached resource demo://readme from demo (text/plain)]\n"
        "The demo server answers the tests.\n[end of demo://readme]"
    }


def test_a_binary_resource_is_named_not_attached(demo):
    answer = client_for("ann").post("/api/mcp/resources/attach/", {"server": "demo", "uri": "demo://logo"})
    assert answer.json()["text"].startswith("[binary resource demo://logo: image/png, about 12 bytes, not attached]")


def test_an_unknown_uri_is_a_502_with_the_servers_words(demo):
    answer = client_for("ann").post("/api/mcp/resources/attach/", {"server": "demo", "uri": "demo://nothing"})
    assert answer.status_code == 502 and "refused" in answer.json()["detail"]


def test_another_tenants_resources_are_neither_listed_nor_read(demo):
    other = client_for("bob", tenant=OTHER_TENANT)
    assert other.get("/api/mcp/resources/").json() == {"resources": [], "unavailable": {}}
    answer = other.post("/api/mcp/resources/attach/", {"server": "demo", "uri": "demo://readme"})
    assert answer.status_code == 400 and "no enabled MCP server called 'demo'" in answer.json()["server"][0]
