"""Serve the MCP conformance suite's fixture tools through the product's endpoint at /mcp.

    manage.py mcp_conformance_server --port 8765

The fixtures are approved tools of the tenant ``conformance``, served as its bundle of the
same name by ``MCPEndpoint`` (the code behind /mcp/<bundle>/ in production), mounted in
front of Django as in eunice/asgi.py. The suite sends no credentials, so this server (and
only this one, bound to 127.0.0.1) treats every request as the conformance tenant's
fixture user; it serves nothing but the fixtures.
"""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve the MCP conformance fixture tools at http://127.0.0.1:PORT/mcp (docs/mcp-server.md)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--port", type=int, default=8765)
        parser.add_argument("--no-migrate", action="store_true", help="the database is already migrated")

    def handle(self, *args: Any, port: int, no_migrate: bool, **options: Any) -> None:
        import uvicorn
        from django.contrib.auth import get_user_model
        from django.core.asgi import get_asgi_application

        from mcpserver import fixtures
        from mcpserver.endpoint import MCPEndpoint, MCPMount
        from mcpserver.served import Caller
        from registry.models import TenantMembership
        from registry.registry import get_registry

        if not no_migrate:
            call_command("migrate", verbosity=0, interactive=False)
        fixtures.install(get_registry())
        user, _ = get_user_model().objects.get_or_create(username="conformance-fixture")
        TenantMembership.objects.update_or_create(user=user, defaults={"tenant_id": fixtures.TENANT})
        caller = Caller(str(user.pk), fixtures.TENANT, fixtures.BUNDLE, frozenset(fixtures.FIXTURES), "conformance")

        def the_fixture_user(authorization: str, bundle: str, resource: str) -> Caller:
            return caller

        endpoint = MCPEndpoint(
            identify=the_fixture_user,
            default_bundle=fixtures.BUNDLE,
            requires=fixtures.REQUIRES,
            watch_seconds=0.25,  # the suite listens for a list change for 1.5 s
        )
        app = MCPMount(get_asgi_application(), endpoint)
        self.stdout.write(f"serving the conformance fixtures at http://127.0.0.1:{port}/mcp")
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
