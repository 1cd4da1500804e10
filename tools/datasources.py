"""Handlers of register_datasource, set_datasource_auth and query_datasource.

Registering a source or changing its password is staff-only: it points the
platform at a database or a file on the server. Querying a registered source is
open to the tenant's users. Passwords are sealed at rest and never echoed.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import transaction

from conversations.catalog.access import is_staff
from conversations.catalog.secrets import seal
from conversations.models import DataSource
from registry.contract import Effects, Err, HintException, Ok, Warning, uniform_contract
from tools.datacommon import catalog, catalog_errors, quality_warnings, table_ok
from tools.sources import SourceError, ranked_names, run_sql, schema_of

_POSTGRES_FIELDS = ("host", "port", "database", "user")


@uniform_contract(name="register_datasource", is_tabular=False)
def register_datasource(inputs: dict, context: dict) -> Ok | Err:
    """Create or replace a datasource of the caller's tenant, check it answers, list its tables."""
    if not is_staff(context):
        return Err("registering a datasource needs a staff member", "PermissionDenied")
    kind = inputs["kind"]
    location = _location(kind, inputs)
    with transaction.atomic():
        source, created = DataSource.objects.update_or_create(
            tenant_id=context["tenant_id"], name=inputs["name"],
            defaults={"kind": kind, "location": location, "created_by": str(context.get("user_id", ""))},
        )
        if inputs.get("password"):
            source.secret = seal(inputs["password"])
            source.save(update_fields=["secret"])
    return _checked(source, "registered" if created else "updated")


@uniform_contract(name="set_datasource_auth", is_tabular=False)
def set_datasource_auth(inputs: dict, context: dict) -> Ok | Err:
    """Replace the stored password of a datasource and check it connects."""
    if not is_staff(context):
        return Err("changing a datasource's credentials needs a staff member", "PermissionDenied")
    source = _source(inputs["name"], context)
    source.secret = seal(inputs["password"])
    source.save(update_fields=["secret", "updated_at"])
    return _checked(source, "credentials updated for")


@uniform_contract(name="query_datasource", is_tabular=True)
@catalog_errors
def query_datasource(inputs: dict, context: dict) -> Ok | Err:
    """One read-only query on a registered source, capped in rows and time."""
    source = _source(inputs["name"], context)
    save_as = inputs.get("save_as")
    cap = settings.DATA["SAVE_MAX_ROWS"] if save_as else inputs.get("max_rows", settings.DATA["QUERY_MAX_ROWS"])
    try:
        frame = run_sql(source, inputs["sql"], max_rows=cap, timeout=settings.DATA["DATASOURCE_TIMEOUT_SECONDS"])
    except SourceError as exc:
        return Err(str(exc), "DatasourceUnavailable")
    if len(frame) > cap:
        raise HintException(
            "fetch", f"the query returns more than {cap:,} rows",
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
    except SourceError as exc:
        tables = str(exc)
    return {"kind": "datasource", "name": source.name, "source_kind": source.kind,
            "location": source.location, "has_password": bool(source.secret), "tables": tables,
            "how_to_use": f"query_datasource {{name: {name!r}, sql: 'SELECT …'}} (read-only)"}


def _location(kind: str, inputs: dict) -> dict:
    if kind == DataSource.Kind.POSTGRES:
        missing = [field for field in ("host", "database", "user") if not inputs.get(field)]
        if missing:
            raise HintException("schema", f"a postgres datasource needs {', '.join(missing)}")
        return {field: inputs[field] for field in _POSTGRES_FIELDS if inputs.get(field)}
    path = inputs.get("path")
    if not path:
        raise HintException("schema", f"a {kind} datasource needs `path`: the file on the server")
    if not Path(path).is_file():
        raise HintException("schema", f"path: no file at {path!r}")
    return {"path": str(Path(path).resolve())}


def _source(name: str, context: dict) -> DataSource:
    source = DataSource.objects.for_tenant(context["tenant_id"]).filter(name=name).first()
    if source is None:
        known = list(DataSource.objects.for_tenant(context["tenant_id"]).values_list("name", flat=True))
        raise HintException("schema", f"name: no datasource {name!r} for this tenant", ranked_names(name, known))
    return source


def _checked(source: DataSource, verb: str) -> Ok | Err:
    try:
        tables = schema_of(source)
    except SourceError as exc:
        return Err(f"{verb} datasource {source.name!r}, but {exc}", "DatasourceUnavailable")
    listing = ", ".join(f"{t} ({len(c)} columns)" for t, c in list(tables.items())[:30])
    return Ok(rows=len(tables), data=f"{verb} datasource {source.name!r} ({source.kind}); tables: {listing or 'none'}")
