"""Handlers of register_datasource, set_datasource_auth and query_datasource.

Registering a source or changing its password points the platform at a
database or a file on the server: it takes a staff member holding the Django
permission (``datacatalog.add_datasource`` to add one,
``datacatalog.change_datasource`` to replace one or change its password).
What a source may reach (never the app's own database, private hosts only
where the deployment allows them, files only in the tenant's folders) is
checked here before anything is stored, and again at every connect
(``tools.lib.datasource_reach``). Querying a registered source is open to the
tenant's users; sources are scoped to one tenant. Passwords are sealed at rest
and never echoed.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from datacatalog.models import DataSource
from datacatalog.secrets import seal
from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from tools.actors import staff_user
from tools.datacommon import catalog, catalog_errors, quality_warnings, table_ok
from tools.lib.datasource_reach import SourceRefused, postgres_target, tenant_file
from tools.sources import SourceError, ranked_names, run_sql, schema_of

_POSTGRES_FIELDS = ("host", "port", "database", "user")
ADD, CHANGE = "datacatalog.add_datasource", "datacatalog.change_datasource"


@uniform_contract(name="register_datasource", is_tabular=False)
def register_datasource(inputs: dict, context: ToolContext) -> Ok | Err:
    """Create or replace a datasource of the caller's tenant, check it answers, list its tables.

    A source that breaks a reach rule, before or once connected, is not stored.
    """
    existing = DataSource.objects.for_tenant(context.tenant_id).filter(name=inputs["name"]).first()
    needed = CHANGE if existing else ADD
    if not _staff_with(context, needed):
        return Err(f"registering a datasource needs a staff member with the {needed} permission", "PermissionDenied")
    kind = inputs["kind"]
    secret = seal(inputs["password"]) if inputs.get("password") else (existing.secret if existing else "")
    try:
        location = _location(kind, inputs, context.tenant_id)
        candidate = DataSource(
            tenant_id=context.tenant_id, name=inputs["name"], kind=kind, location=location, secret=secret
        )
        tables = _tables(candidate)
    except SourceRefused as exc:
        return Err(f"datasource {inputs['name']!r} refused: {exc}", "DatasourceRefused")
    with transaction.atomic():
        source, created = DataSource.objects.update_or_create(
            tenant_id=context.tenant_id,
            name=inputs["name"],
            defaults={"kind": kind, "location": location, "secret": secret, "created_by": str(context.user_id)},
        )
    return _report(source, "registered" if created else "updated", tables)


@uniform_contract(name="set_datasource_auth", is_tabular=False)
def set_datasource_auth(inputs: dict, context: ToolContext) -> Ok | Err:
    """Replace the stored password of a datasource and check it connects."""
    if not _staff_with(context, CHANGE):
        return Err(
            f"changing a datasource's credentials needs a staff member with the {CHANGE} permission", "PermissionDenied"
        )
    source = _source(inputs["name"], context)
    source.secret = seal(inputs["password"])
    source.save(update_fields=["secret", "updated_at"])
    try:
        tables = _tables(source)
    except SourceRefused as exc:
        return Err(f"credentials updated for datasource {source.name!r}, but it is refused: {exc}", "DatasourceRefused")
    return _report(source, "credentials updated for", tables)


@uniform_contract(name="query_datasource", is_tabular=True)
@catalog_errors
def query_datasource(inputs: dict, context: ToolContext) -> Ok | Err:
    """One read-only query on a registered source, capped in rows and time."""
    source = _source(inputs["name"], context)
    save_as = inputs.get("save_as")
    cap = settings.DATA["SAVE_MAX_ROWS"] if save_as else inputs.get("max_rows", settings.DATA["QUERY_MAX_ROWS"])
    try:
        frame = run_sql(source, inputs["sql"], max_rows=cap, timeout=settings.DATA["DATASOURCE_TIMEOUT_SECONDS"])
    except SourceRefused as exc:
        return Err(f"datasource {source.name!r} refused: {exc}", "DatasourceRefused")
    except SourceError as exc:
        return Err(str(exc), "DatasourceUnavailable")
    if len(frame) > cap:
        raise HintException(
            "fetch",
            f"the query returns more than {cap:,} rows",
            add=None if save_as else "save_as: '<name>' to keep up to the dataset cap in this conversation",
            narrow="aggregate (GROUP BY), filter (WHERE) or add LIMIT",
        )
    warnings = quality_warnings(frame)
    if not save_as:
        return table_ok(frame, warnings=warnings)
    catalog(context).save(save_as, frame, source="tool", source_detail=f"query_datasource:{source.name}")
    warnings.append(Warning("info", f"saved as dataset {save_as!r}"))
    return table_ok(frame, warnings=warnings, effects=Effects(datasets={save_as: frame}))


def describe_source(name: str, tenant_id: str) -> dict | None:
    """What describe_entry shows for a datasource (never the password), or None."""
    source = DataSource.objects.for_tenant(tenant_id).filter(name=name).first()
    if source is None:
        return None
    try:
        tables: dict | str = schema_of(source)
    except SourceRefused as exc:
        tables = f"refused: {exc}"
    except SourceError as exc:
        tables = str(exc)
    return {
        "kind": "datasource",
        "name": source.name,
        "source_kind": source.kind,
        "location": source.location,
        "has_password": bool(source.secret),
        "tables": tables,
        "how_to_use": f"query_datasource {{name: {name!r}, sql: 'SELECT …'}} (read-only)",
    }


def _staff_with(context: ToolContext, permission: str) -> bool:
    """Whether the caller is an active staff member holding ``permission`` ("app.codename")."""
    capabilities = context.capabilities
    if capabilities:
        return "staff" in capabilities and permission in capabilities
    user = staff_user(context.user_id)
    return user is not None and user.has_perm(permission)


def _location(kind: str, inputs: dict, tenant_id: str) -> dict:
    """The location to store, once it passes the reach rules. Raises HintException, SourceRefused."""
    if kind == DataSource.Kind.POSTGRES:
        missing = [field for field in ("host", "database", "user") if not inputs.get(field)]
        if missing:
            raise HintException("schema", f"a postgres datasource needs {', '.join(missing)}")
        location = {field: inputs[field] for field in _POSTGRES_FIELDS if inputs.get(field)}
        postgres_target(location)
        return location
    path = inputs.get("path")
    if not path:
        raise HintException("schema", f"a {kind} datasource needs `path`: a file in this tenant's uploads")
    return {"path": str(tenant_file(tenant_id, path))}


def _source(name: str, context: ToolContext) -> DataSource:
    source = DataSource.objects.for_tenant(context.tenant_id).filter(name=name).first()
    if source is None:
        known = list(DataSource.objects.for_tenant(context.tenant_id).values_list("name", flat=True))
        raise HintException("schema", f"name: no datasource {name!r} for this tenant", ranked_names(name, known))
    return source


def _tables(source: DataSource) -> dict[str, list[str]] | SourceError:
    """The source's tables, or why it cannot be read now. Raises SourceRefused."""
    try:
        return schema_of(source)
    except SourceError as exc:
        return exc


def _report(source: DataSource, verb: str, tables: dict[str, list[str]] | SourceError) -> Ok | Err:
    if isinstance(tables, SourceError):
        return Err(f"{verb} datasource {source.name!r}, but {tables}", "DatasourceUnavailable")
    listing = ", ".join(f"{t} ({len(c)} columns)" for t, c in list(tables.items())[:30])
    return Ok(rows=len(tables), data=f"{verb} datasource {source.name!r} ({source.kind}); tables: {listing or 'none'}")


_NAME = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$", "description": "The datasource's name."}

TOOLS = (
    Tool(
        name="register_datasource",
        description=(
            "Register a database or file the conversation's tools may query read-only: a "
            "PostgreSQL database (host, port, database, user, password), an SQLite file, or a "
            "CSV/Parquet file in the tenant's uploads. Staff only. Checks the connection and lists "
            "the tables; the password is stored encrypted and never shown again."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": _NAME,
                "kind": {"type": "string", "enum": ["postgres", "sqlite", "csv", "parquet"]},
                "host": {"type": "string"},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535, "default": 5432},
                "database": {"type": "string"},
                "user": {"type": "string"},
                "password": {"type": "string", "writeOnly": True, "description": "Stored encrypted; never echoed."},
                "path": {"type": "string", "description": "For sqlite, csv and parquet: the upload's name or path."},
            },
            "required": ["name", "kind"],
            "additionalProperties": False,
        },
        handler=register_datasource,
        category="datasources",
        status_message="Registering the datasource",
        timeout_seconds=30,
    ),
    Tool(
        name="set_datasource_auth",
        description=(
            "Set or replace the password of a registered datasource (staff only), then check "
            "that it connects. The password is stored encrypted and never shown."
        ),
        input_schema={
            "type": "object",
            "properties": {"name": _NAME, "password": {"type": "string", "minLength": 1, "writeOnly": True}},
            "required": ["name", "password"],
            "additionalProperties": False,
        },
        handler=set_datasource_auth,
        category="datasources",
        status_message="Updating the credentials",
        timeout_seconds=30,
    ),
    Tool(
        name="query_datasource",
        description=(
            "Run one read-only SQL query on a registered datasource (its own SQL dialect) and get "
            "the rows (500 by default). Writes are refused by the database. Use describe_entry "
            "first to see its tables; save_as keeps a larger result as a conversation dataset."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": _NAME,
                "sql": {"type": "string", "minLength": 1},
                "max_rows": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 500},
                "save_as": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
            },
            "required": ["name", "sql"],
            "additionalProperties": False,
        },
        handler=query_datasource,
        category="datasources",
        status_message="Querying the datasource",
        timeout_seconds=60,
    ),
)
