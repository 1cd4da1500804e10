"""Admin: "My Connections" (MCP servers with actions, quarantine review) and "Marketplace".

Secrets in env and headers are never rendered: the form takes new values
and shows only which keys are set. Every action calls a service function.
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from registry.admin_scope import TenantScopedAdmin
from registry.mcp import MCPError, marketplace, services
from registry.mcp.inventory import server_of, tool_state
from registry.mcp.metadata import icons_of, title_of
from registry.mcp.naming import definition_hash
from registry.models import MCPAuditLog, MCPAuthorization, MCPOAuthGrant, MCPServer, TenantMembership, ToolDefinition
from registry.tenancy import tenant_of

SECRET_FIELDS = ("env", "headers", "oauth_client")


class MCPServerForm(forms.ModelForm):
    env = forms.JSONField(required=False, help_text="Write-only: enter the whole mapping to replace it.")
    headers = forms.JSONField(required=False, help_text="Write-only: enter the whole mapping to replace it.")
    authorization = forms.ChoiceField(
        choices=MCPAuthorization.choices,
        required=False,
        help_text="Who authorizes Eunice at an OAuth-protected server; then press Connect below.",
    )
    oauth_client = forms.JSONField(
        required=False,
        label="OAuth client",
        help_text='Write-only. Credentials registered with the authorization server by hand: {"client_id": …, '
        '"client_secret": …, "issuer": …}. Empty: Eunice registers itself (client metadata document or '
        "dynamic registration).",
    )

    class Meta:
        model = MCPServer
        fields = (
            "name",
            "tenant_id",
            "transport",
            "command",
            "args",
            "env",
            "url",
            "headers",
            "allow_private_network",
            "enabled",
            "approval_policy",
            "call_timeout_seconds",
            "idempotent_tools",
            "authorization",
            "oauth_client",
        )

    acting_user = None  # set per request by MCPServerAdmin.get_form

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for key in SECRET_FIELDS:
            self.initial[key] = None  # never echo a stored secret back into the page

    def service_fields(self) -> dict:
        """What the form changes, as the services take it (an empty secret keeps the stored one)."""
        fields = {
            key: self.cleaned_data[key]
            for key in self.changed_data
            if key in services.EDITABLE and key in self.cleaned_data
        }
        for key in (*SECRET_FIELDS, "authorization"):
            if self.cleaned_data.get(key) in (None, ""):
                fields.pop(key, None)
        return fields

    def clean(self) -> dict:
        """The services' own rules (URL safety, who may start a process), shown as
        form errors with the form kept, rather than a bare 403 page."""
        cleaned = super().clean()
        if self.errors:
            return cleaned
        existing = self.instance if self.instance.pk else None
        try:
            services.check_server(
                existing,
                acting_user=self.acting_user,
                tenant_id=cleaned.get("tenant_id") or self.instance.tenant_id,
                name=cleaned.get("name") or self.instance.name,
                **self.service_fields(),
            )
        except PermissionDenied as exc:
            raise forms.ValidationError(str(exc)) from None
        except ValidationError as exc:
            if not hasattr(exc, "error_dict"):
                raise forms.ValidationError(exc.messages) from None
            for field, errors in exc.error_dict.items():
                self.add_error(field if field in self.fields else None, errors)
        return cleaned


@admin.register(MCPServer)
class MCPServerAdmin(admin.ModelAdmin):
    form = MCPServerForm
    list_display = (
        "name",
        "tenant_id",
        "transport",
        "status",
        "tool_count",
        "quarantined",
        "last_error",
        "connected_at",
    )
    list_filter = ("status", "transport", "tenant_id")
    actions = ("connect_servers", "disconnect_servers", "refresh_servers")
    readonly_fields = ("status", "last_error", "connected_at", "secret_keys", "oauth")

    def get_queryset(self, request: HttpRequest):  # noqa: ANN201
        queryset = super().get_queryset(request).with_tool_counts()
        if request.user.is_superuser:
            return queryset
        return queryset.for_tenant(tenant_of(request.user) or "")

    @admin.display(description="tools", ordering="tools_approved")
    def tool_count(self, server: MCPServer) -> int:
        return server.tools_approved

    @admin.display(description="held for review", ordering="tools_held")
    def quarantined(self, server: MCPServer) -> int:
        return server.tools_held

    @admin.display(description="secrets set")
    def secret_keys(self, server: MCPServer) -> str:
        return ", ".join(sorted([*(server.env or {}), *(server.headers or {})])) or "none"

    @admin.display(description="OAuth connection")
    def oauth(self, server: MCPServer) -> str:
        """The Connect button of an OAuth server, and whose grants Eunice holds."""
        if server.pk is None or server.authorization == MCPAuthorization.NONE:
            return "not used"
        tenant_grant = server.oauth_grants.filter(user__isnull=True).exists()
        users = server.oauth_grants.filter(user__isnull=False).count()
        if server.authorization == MCPAuthorization.TENANT:
            held = "authorized for the tenant" if tenant_grant else "not authorized yet"
        else:
            held = f"{users} user(s) authorized; each user connects from the chat page"
        link = reverse("mcp-oauth-connect", args=[server.pk])
        return format_html('<a class="button" id="mcp-oauth-connect-link" href="{}">Connect</a> {}', link, held)

    def get_form(self, request: HttpRequest, obj=None, change=False, **kwargs):  # noqa: ANN001, ANN201
        form = super().get_form(request, obj, change=change, **kwargs)
        form.acting_user = request.user  # a fresh class per request: the rules are judged for this user
        return form

    def save_model(self, request: HttpRequest, obj: MCPServer, form: MCPServerForm, change: bool) -> None:
        fields = form.service_fields()
        try:
            if change:
                services.update_server(MCPServer.objects.get(pk=obj.pk), acting_user=request.user, **fields)
            else:
                created = services.create_server(
                    acting_user=request.user, tenant_id=form.cleaned_data["tenant_id"], name=obj.name, **fields
                )
                obj.pk = created.pk
        except (PermissionDenied, ValidationError) as exc:
            raise PermissionDenied(str(exc)) from None

    def delete_model(self, request: HttpRequest, obj: MCPServer) -> None:
        services.delete_server(obj, acting_user=request.user)

    def _each(self, request: HttpRequest, queryset, service, verb: str) -> None:  # noqa: ANN001
        for server in queryset:
            try:
                result = service(server, acting_user=request.user)
            except MCPError as exc:
                self.message_user(request, f"{server.name}: {exc}", messages.ERROR)
                continue
            self.message_user(request, f"{server.name}: {verb} ({_summary(result)})")

    @admin.action(description="Connect")
    def connect_servers(self, request: HttpRequest, queryset) -> None:  # noqa: ANN001
        self._each(request, queryset, services.connect_server, "connected")

    @admin.action(description="Disconnect")
    def disconnect_servers(self, request: HttpRequest, queryset) -> None:  # noqa: ANN001
        self._each(request, queryset, services.disconnect_server, "disconnected")

    @admin.action(description="Refresh (reconnect, re-list tools)")
    def refresh_servers(self, request: HttpRequest, queryset) -> None:  # noqa: ANN001
        self._each(request, queryset, services.refresh_server, "refreshed")

    def get_urls(self):  # noqa: ANN201
        own = [
            path("<int:pk>/tools/", self.admin_site.admin_view(self.tools_view), name="mcp-server-tools"),
            path(
                "tools/<int:tool_pk>/approve/", self.admin_site.admin_view(self.approve_view), name="mcp-tool-approve"
            ),
            path("marketplace/", self.admin_site.admin_view(self.marketplace_view), name="mcp-marketplace"),
        ]
        return own + super().get_urls()

    def tools_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        server = get_object_or_404(self.get_queryset(request), pk=pk)
        tools = []
        for row in _rows(server).order_by("name"):
            remote = (row.test_results or {}).get("remote", {})
            approved = (server.approved_tools.get(remote.get("name"), {}) or {}).get("definition")
            tools.append(
                {
                    "row": row,
                    "state": tool_state(row),
                    "approved": json.dumps(approved, indent=2, sort_keys=True) if approved else "",
                    "current": json.dumps(remote, indent=2, sort_keys=True),
                    # The approval is bound to this: the page's copy, not what the server says at click time.
                    "shown_hash": definition_hash(remote),
                    "hints": annotation_hints(remote),
                    "title": title_of(remote),
                    "icons": icons_of(remote),
                }
            )
        context = {
            **self.admin_site.each_context(request),
            "server": server,
            "tools": tools,
            "title": f"Tools of {server.name}",
        }
        return TemplateResponse(request, "admin/mcp/tools.html", context)

    def approve_view(self, request: HttpRequest, tool_pk: int) -> HttpResponse:
        row = get_object_or_404(ToolDefinition.objects.live(), pk=tool_pk, tool_type="mcp")
        server = get_object_or_404(self.get_queryset(request), pk=server_of(row))
        if request.method == "POST":
            try:
                services.approve_tool(row, acting_user=request.user, shown_hash=request.POST.get("shown_hash", ""))
            except (PermissionDenied, ValidationError, MCPError) as exc:
                self.message_user(request, f"{row.name} was not approved: {_reason(exc)}", messages.ERROR)
            else:
                self.message_user(request, f"approved {row.name}")
        return redirect("admin:mcp-server-tools", pk=server.pk)

    def marketplace_view(self, request: HttpRequest) -> HttpResponse:
        query = request.GET.get("q", "").strip()
        found = marketplace.search(query) if query else marketplace.SearchResult(list(marketplace.BUNDLED))
        if request.method == "POST":
            return self._install(request)
        context = {
            **self.admin_site.each_context(request),
            "title": "Marketplace",
            "query": query,
            "listings": found.listings,
            "registry_error": found.registry_error,
            "preview": marketplace.find(request.GET["install"]) if request.GET.get("install") else None,
        }
        return TemplateResponse(request, "admin/mcp/marketplace.html", context)

    def _install(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied("installing an MCP server needs the permission to add one")
        listing = marketplace.find(request.POST.get("id", ""))
        tenant = tenant_of(request.user) or request.POST.get("tenant_id", "")
        if listing is None or not tenant:
            self.message_user(request, "unknown listing, or no tenant to install for", messages.ERROR)
            return redirect("admin:mcp-marketplace")
        try:
            found = marketplace.install(listing, acting_user=request.user, tenant_id=tenant, name=request.POST["name"])
        except (MCPError, PermissionDenied, ValidationError) as exc:
            self.message_user(request, f"could not install {listing.id}: {exc}", messages.ERROR)
            return redirect("admin:mcp-marketplace")
        self.message_user(request, f"installed {found['server']}: {_summary(found)}")
        return redirect("admin:registry_mcpserver_changelist")


@admin.register(MCPOAuthGrant)
class MCPOAuthGrantAdmin(TenantScopedAdmin):
    """What Eunice holds from authorization servers, per server and owner; no secret shown.
    Deleting one revokes it (registry.mcp.authorize.revoke: audited, sessions closed)."""

    tenant_field = "server__tenant_id"
    list_display = ("server", "owner", "issuer", "scope", "expires_at", "updated_at")
    list_filter = ("server",)
    fields = ("server", "owner", "issuer", "scope", "expires_at", "updated_at")
    readonly_fields = fields

    @admin.display(description="owner")
    def owner(self, grant: MCPOAuthGrant) -> str:
        return grant.user.get_username() if grant.user is not None else "the tenant"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:  # noqa: ANN001
        return False

    def delete_model(self, request: HttpRequest, obj: MCPOAuthGrant) -> None:
        from registry.mcp.authorize import revoke

        revoke(obj.server, acting_user=request.user, user=obj.user)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:  # noqa: ANN001
        for grant in queryset.select_related("server", "user"):
            self.delete_model(request, grant)


@admin.register(MCPAuditLog)
class MCPAuditLogAdmin(TenantScopedAdmin):
    list_display = ("created_at", "actor", "action", "server_name", "tenant_id")
    list_filter = ("action", "tenant_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:  # noqa: ANN001
        return False


def _rows(server: MCPServer):  # noqa: ANN202
    return ToolDefinition.objects.live().filter(created_by=server.created_by_tag)


ANNOTATION_HINTS = (
    ("readOnlyHint", "read-only", "may change things"),
    ("destructiveHint", "destructive", "not destructive"),
    ("idempotentHint", "idempotent", "not idempotent"),
    ("openWorldHint", "reaches the outside world", "closed world"),
)


def annotation_hints(remote: dict) -> list[str]:
    """The tool's annotations (as the server claims them: hints, not guarantees) in words.

    The spec's defaults apply to a hint the server leaves out, marked "(default)".
    """
    annotations = remote.get("annotations") or {}
    defaults = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
    hints = []
    for key, yes, no in ANNOTATION_HINTS:
        value = annotations.get(key, defaults[key])
        hints.append(f"{yes if value else no}{'' if key in annotations else ' (default)'}")
    return hints


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)


def _summary(result: object) -> str:
    if isinstance(result, dict):
        return f"{result.get('tools_discovered', 0)} tool(s)"
    return f"{result} tool(s) retired"


@admin.register(TenantMembership)
class TenantMembershipAdmin(TenantScopedAdmin):
    list_display = ("user", "tenant_id")
    search_fields = ("user__username", "tenant_id")
