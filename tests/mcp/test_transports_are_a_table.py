"""MCP transports are rows of one table, keyed by the database's choices."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from registry.mcp.config import ServerConfig
from registry.mcp.services import Operator, create_server
from registry.mcp.transports import TRANSPORTS, MissingEndpoint, transport_of
from registry.mcp.urls import UnsafeURL
from registry.models import MCPTransport
from tests.conftest import TENANT


def config(transport: str, **fields) -> ServerConfig:
    return ServerConfig(id=1, name="s", tenant_id=TENANT, transport=transport, **fields)


def test_every_transport_the_database_allows_has_a_row_and_no_other_does():
    assert set(TRANSPORTS) == set(MCPTransport.values)
    assert all(row.kind == kind for kind, row in TRANSPORTS.items())


def test_only_the_stdio_transport_starts_a_process():
    assert {kind for kind, row in TRANSPORTS.items() if row.starts_process} == {MCPTransport.STDIO}


def test_a_stdio_server_without_a_command_is_missing_its_command():
    with pytest.raises(MissingEndpoint) as raised:
        transport_of(config(MCPTransport.STDIO)).check(config(MCPTransport.STDIO))
    assert raised.value.field == "command"


def test_an_http_server_is_pinned_to_the_address_it_may_reach():
    public = config(MCPTransport.STREAMABLE_HTTP, url="https://93.184.216.34/mcp")
    assert transport_of(public).check(public).address == "93.184.216.34"
    private = config(MCPTransport.STREAMABLE_HTTP, url="http://127.0.0.1:9/mcp")
    with pytest.raises(UnsafeURL):
        transport_of(private).check(private)


def test_an_unknown_transport_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="unknown MCP transport 'sse'; use one of stdio, streamable_http"):
        transport_of(config("sse"))


@pytest.mark.django_db
def test_a_server_with_an_unknown_transport_is_a_validation_error_naming_the_field():
    with pytest.raises(ValidationError) as raised:
        create_server(acting_user=Operator(), tenant_id=TENANT, name="odd", transport="sse", command="x")
    assert "transport" in raised.value.message_dict


@pytest.mark.django_db
def test_a_stdio_server_without_a_command_is_a_validation_error_naming_the_command():
    with pytest.raises(ValidationError) as raised:
        create_server(acting_user=Operator(), tenant_id=TENANT, name="bare", transport=MCPTransport.STDIO)
    assert raised.value.message_dict == {"command": ["a stdio server needs a command"]}
