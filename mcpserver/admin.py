"""Staff curate bundles: a name, and the approved tools of their tenant it serves."""

from __future__ import annotations

import difflib
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from mcpserver.models import Bundle
from registry.admin_scope import TenantScopedAdmin
from registry.models import ToolDefinition
from registry.tenancy import tenant_scope


class BundleForm(forms.ModelForm):
    tools = forms.JSONField(
        required=False,
        initial=list,
        help_text='A JSON list of tool names, e.g. ["query", "create_chart"]; only approved tools are served.',
    )

    class Meta:
        model = Bundle
        fields = ("tenant_id", "slug", "title", "description", "all_tools", "tools", "enabled")

    scope: str | None = None  # the staff member's tenant (None: a superuser, every tenant)

    def clean_tools(self) -> list[str]:
        names = self.cleaned_data.get("tools") or []
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise forms.ValidationError("tools: a JSON list of tool names (strings)")
        tenant = self.scope if self.scope is not None else self.data.get("tenant_id", "")
        known = set(ToolDefinition.objects.live().for_tenant(tenant).values_list("name", flat=True))
        for name in names:
            if name not in known:
                closest = difflib.get_close_matches(name, sorted(known), n=3)
                hint = f"; closest: {', '.join(closest)}" if closest else ""
                raise forms.ValidationError(f"tools: no tool {name!r} for tenant {tenant!r}{hint}")
        return sorted(set(names))


@admin.register(Bundle)
class BundleAdmin(TenantScopedAdmin):
    form = BundleForm
    list_display = ("slug", "title", "tenant_id", "all_tools", "tool_count", "enabled", "updated_at")
    list_filter = ("enabled", "tenant_id")
    search_fields = ("slug", "title")

    @admin.display(description="tools")
    def tool_count(self, bundle: Bundle) -> str:
        return "all" if bundle.all_tools else str(len(bundle.tools))

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        return type("ScopedBundleForm", (form,), {"scope": tenant_scope(request.user)})

    def save_model(self, request: HttpRequest, obj: Bundle, form: Any, change: bool) -> None:
        if not change:
            obj.created_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)
