"""Plain INSERTs for the rows a turn writes, composed once per model and database.

A turn writes a handful of rows that nothing reads back in the same request:
its events, its messages, its usage and its record. ``Model.objects.create``
and ``bulk_create`` rebuild the same INSERT on every call, and that
rebuilding was most of their CPU (a usage row: 144 against 74 µs here; a
flush of three events: 326 against 201 µs), all of it under the GIL the
event loop needs when 200 turns open or close at once (bench/turns.py). ``insert_rows`` writes what ``save()`` would: each
value is prepared by its field (``pre_save`` fills ``auto_now_add`` fields),
the primary key comes from the database (an auto field) or the instance.
It sends no signals and sets no primary keys on the rows: use it only for
models nothing listens to, whose new rows the caller does not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections, router
from django.db.models import Field, Model
from django.db.models.fields import AutoFieldMixin

_STATEMENTS: dict[tuple[type[Model], str], tuple[str, tuple[Field, ...]]] = {}


def insert_rows(rows: Sequence[Model]) -> None:
    """INSERT ``rows`` (unsaved instances of one model) with one statement."""
    if not rows:
        return
    model = type(rows[0])
    connection = connections[router.db_for_write(model)]
    sql, fields = _statement(model, connection)
    values = [[field.get_db_prep_save(field.pre_save(row, True), connection) for field in fields] for row in rows]
    with connection.cursor() as cursor:
        if len(values) == 1:
            cursor.execute(sql, values[0])
        else:
            cursor.executemany(sql, values)


def _statement(model: type[Model], connection: Any) -> tuple[str, tuple[Field, ...]]:
    """``model``'s INSERT on ``connection``'s kind of database and the fields it writes."""
    key = (model, connection.vendor)
    statement = _STATEMENTS.get(key)
    if statement is None:
        quote = connection.ops.quote_name
        fields = tuple(f for f in model._meta.concrete_fields if not isinstance(f, AutoFieldMixin))
        columns = ", ".join(quote(f.column) for f in fields)
        placeholders = ", ".join(["%s"] * len(fields))
        statement = _STATEMENTS[key] = (
            f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders})", fields
        )
    return statement
