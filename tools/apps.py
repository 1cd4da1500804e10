from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "System tools"

    def ready(self) -> None:
        from registry import system
        from tools import holdings

        # The registry reaches the catalog only through this port.
        system.install(_Catalog())
        system.install_skills(_Skills())
        # What each tenant holds, which the skill and primitive tools require (tools.holdings).
        holdings.listen()


class _Skills:
    """``registry.ports.SkillShelf`` over ``tools.skills``."""

    def resident(self, tenant_id: str, limit: int) -> list[tuple[str, str]]:
        from tools import skill_shelf

        return skill_shelf.resident(tenant_id, limit)


class _Catalog:
    """``registry.ports.SystemCatalog`` over ``tools.catalog`` (read at each call: tests patch it)."""

    def entries(self) -> list[dict]:
        from tools import catalog

        return catalog.system_tools()

    def all_entries(self) -> list[dict]:
        from tools import catalog

        return list(catalog.all_system_tools())

    def retired(self) -> list[str]:
        from tools import catalog

        return sorted(catalog.RETIRED_TOOLS)

    def flag_of(self, name: str) -> str | None:
        from tools import catalog

        return catalog.FLAG_GATED.get(name)

    def sandbox_callable(self, name: str) -> bool:
        from tools import catalog

        return name in catalog.SANDBOX_CALLABLE
