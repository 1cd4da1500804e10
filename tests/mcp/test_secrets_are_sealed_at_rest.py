"""MCP env and headers are sealed in the database, like datasource passwords, and never shown."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.test import APIClient

from registry.models import MCPServer
from tests.mcp.conftest import add_server, reviewer

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "s3cret-token-value"


def stored(server_pk: int) -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT env, headers FROM mcp_servers WHERE id = %s", [server_pk])
        return cursor.fetchone()


def test_env_and_headers_are_sealed_and_read_back():
    server = add_server(env={"TOKEN": SECRET}, headers={"Authorization": f"Bearer {SECRET}"})
    env, headers = stored(server.pk)
    assert SECRET not in env and SECRET not in headers and "TOKEN" not in env
    again = MCPServer.objects.get(pk=server.pk)
    assert again.env == {"TOKEN": SECRET} and again.headers == {"Authorization": f"Bearer {SECRET}"}


def test_neither_rest_nor_admin_shows_them(client):
    server = add_server(env={"TOKEN": SECRET})
    staff = reviewer()
    api = APIClient()
    api.force_authenticate(staff)
    body = api.get(f"/api/mcp/servers/{server.pk}/").content.decode()
    assert SECRET not in body and '"env_keys":["TOKEN"]' in body
    client.force_login(staff)
    page = client.get(f"/admin/registry/mcpserver/{server.pk}/change/").content.decode()
    assert SECRET not in page and "TOKEN" in page


def test_the_migration_seals_rows_stored_in_clear():
    executor = MigrationExecutor(connection)
    executor.migrate([("registry", "0005_mcp_servers")])
    old = executor.loader.project_state([("registry", "0005_mcp_servers")]).apps.get_model("registry", "MCPServer")
    row = old.objects.create(
        name="legacy", tenant_id="acme", transport="stdio", command="x", env={"TOKEN": SECRET}, headers={}
    )
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    env, _ = stored(row.pk)
    assert SECRET not in env
    assert MCPServer.objects.get(pk=row.pk).env == {"TOKEN": SECRET}
