"""Plain INSERTs for the rows a turn writes, composed once per model and database.

A turn writes a handful of rows that nothing reads back in the same request:
its events, its messages, its usage and its record. ``Model.objects.create``
and ``bulk_create`` rebuild the same INSERT on every call, and that
rebuilding was most of their CPU (a usage row: 144 against 74 µs here; a
flush of three events: 326 against 201 µs), all of it under the GIL the
event loop needs when 200 turns open or close at once (bench/turns.py). ``insert_rows``
writes what ``save()`` would: each value is prepared by its field (``pre_save`` fills ``auto_now_add`` fields),
the primary key comes from the database (an auto field) or the instance.
It sends no signals and sets no primary keys on the rows: use it only for
models nothing listens to, whose new rows the caller does not read.

Several rows go as one multi-row ``INSERT … VALUES (…), (…)``, not
``executemany``: for a flush of three events 186 against 258 µs of CPU on
PostgreSQL (psycopg runs ``executemany`` as a pipeline of statements) and 125
against 162 µs on SQLite; eight rows 254 against 385 µs on SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections, router
from django.db.models import Field, Model
from django.db.models.fields import AutoFieldMixin

MAX_ROWS_PER_STATEMENT = 100  # bounds the statements cached per model, and each one's parameters

_FIELDS: dict[type[Model], tuple[Field, ...]] = {}
_STATEMENTS: dict[tuple[type[Model], str, int], str] = {}


def insert_rows(rows: Sequence[Model]) -> None:
    """INSERT ``rows`` (unsaved instances of one model), in order, with one
    statement per ``MAX_ROWS_PER_STATEMENT`` rows (fewer where the database
    takes fewer parameters)."""
    if not rows:
        return
    model = type(rows[0])
    connection = connections[router.db_for_write(model)]
    fields = _fields(model)
    batch = max(1, min(MAX_ROWS_PER_STATEMENT, connection.ops.bulk_batch_size(fields, rows)))
    with connection.cursor() as cursor:
        for start in range(0, len(rows), batch):
            chunk = rows[start : start + batch]
            params = [
                field.get_db_prep_save(field.pre_save(row, True), connection) for row in chunk for field in fields
            ]
            cursor.execute(_statement(model, connection, len(chunk)), params)


def _fields(model: type[Model]) -> tuple[Field, ...]:
    """The columns an INSERT of ``model`` writes: all but an auto primary key."""
    fields = _FIELDS.get(model)
    if fields is None:
        fields = _FIELDS[model] = tuple(f for f in model._meta.concrete_fields if not isinstance(f, AutoFieldMixin))
    return fields


def _statement(model: type[Model], connection: Any, rows: int) -> str:
    """``model``'s INSERT of ``rows`` rows on ``connection``'s kind of database."""
    key = (model, connection.vendor, rows)
    statement = _STATEMENTS.get(key)
    if statement is None:
        quote = connection.ops.quote_name
        fields = _fields(model)
        columns = ", ".join(quote(f.column) for f in fields)
        row = "(" + ", ".join(["%s"] * len(fields)) + ")"
        statement = _STATEMENTS[key] = (
            f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES {', '.join([row] * rows)}"
        )
    return statement
