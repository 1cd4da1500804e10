"""Reads whose SQL Django composes once per process and database, then runs with new values.

Building a queryset and compiling it to SQL is most of what a small read costs:
the state block's observations took 1,000 µs of CPU through the ORM against 80 µs
for running the same SQL (a loaded machine; the ratio is what counts), and a
turn makes about twenty such reads before its first chunk (bench/turn_start.py).
A ``Prepared`` read is a queryset built by a function of its values. It is
compiled once per database with a marker in place of each value; later reads
put the values where the markers were and convert the columns as the ORM does
(``from_db_value``: JSON, datetimes on SQLite). The counterpart of
``conversations.inserts`` for reads.

What may be prepared: a ``values_list()`` queryset (flat or not), or a plain model
queryset (no ``select_related``, annotations or extra columns), whose builder uses
each value only as the right-hand side of a comparison (``=``, ``>=``, ``IN``) on a
text or integer column (a marker that the ORM would change, as ``startswith``
does, is refused) and builds the same query whatever the values are, for a given
number of them (``role__in=roles`` is one query per length of ``roles``). Each value
keeps the type (``str`` or ``int``) it had in the first read; a read with a value of
another type (a UUID primary key of a custom user model) goes through the ORM.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections, router
from django.db.models import Model, QuerySet
from django.db.models.query import FlatValuesListIterable, ModelIterable, ValuesListIterable

T = TypeVar("T")
_MARKERS = itertools.count()
# Integer stand-ins: within every integer column's range (Django drops a comparison
# with a value out of it) and unlike any constant a query holds.
_INT_MARKERS = 1_999_999_937
_lock = threading.Lock()


@dataclass(frozen=True)
class _Compiled:
    """One query shape on one database: its SQL, and how a read fills and reads it."""

    sql: str
    params: tuple[Any, ...]  # the constant parameters, a marker where a value goes
    # (parameter position, value index, the type the ORM gave the parameter: psycopg's Int4 for an
    # integer column on PostgreSQL; None for a plain str or int)
    slots: tuple[tuple[int, int, type | None], ...]
    converters: tuple[tuple[int, tuple[Callable, ...], Any], ...]  # (column, its converters, its expression)
    flat: bool
    model: type[Model] | None  # set when each row is an instance
    attnames: tuple[str, ...]  # the instance's fields, in column order


class Prepared(Generic[T]):
    """A read built by ``build(*values)``, compiled on first use per database."""

    def __init__(self, build: Callable[..., QuerySet]) -> None:
        self._build = build
        self._compiled: dict[tuple[str, int], _Compiled] = {}  # (database, number of values) -> its query
        self._model: type[Model] | None = None

    def __call__(self, *values: str | int) -> list[T]:
        """The rows for ``values``, as the queryset ``build(*values)`` would give them."""
        if not all(_kind(value) is not None for value in values):
            return list(self._build(*values))
        compiled = None
        if self._model is not None:
            alias = router.db_for_read(self._model)
            compiled = self._compiled.get((alias, len(values)))
        if compiled is None:
            alias, compiled = self._compile(values)
        connection = connections[alias]
        params = list(compiled.params)
        for position, index, cast in compiled.slots:
            params[position] = values[index] if cast is None else cast(values[index])
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        if compiled.converters:
            rows = [_converted(row, compiled.converters, connection) for row in rows]
        if compiled.model is not None:
            model, attnames = compiled.model, list(compiled.attnames)
            return [model.from_db(alias, attnames, row) for row in rows]  # type: ignore[misc]
        return [row[0] for row in rows] if compiled.flat else [tuple(row) for row in rows]  # type: ignore[misc]

    def _compile(self, values: tuple[str | int, ...]) -> tuple[str, _Compiled]:
        markers = [_marker(value) for value in values]
        queryset = self._build(*markers)
        compiler = queryset.query.get_compiler(queryset.db)
        sql, params = compiler.as_sql()
        compiled = _Compiled(
            sql=sql,
            params=tuple(params),
            slots=_slots(sql, params, markers),
            converters=tuple(
                (column, tuple(convs), expression)
                for column, (convs, expression) in compiler.get_converters(
                    [s[0] for s in compiler.select[: compiler.col_count]]
                ).items()
            ),
            flat=queryset._iterable_class is FlatValuesListIterable,
            model=queryset.model if queryset._iterable_class is ModelIterable else None,
            attnames=_attnames(queryset, compiler),
        )
        with _lock:
            self._model = queryset.model
            self._compiled[queryset.db, len(values)] = compiled
        return queryset.db, compiled


def _marker(value: str | int) -> str | int:
    """A stand-in for ``value`` (text or an integer) when the query is composed, of its type,
    found nowhere else."""
    return f"\x00prepared-{next(_MARKERS)}\x00" if isinstance(value, str) else _INT_MARKERS + next(_MARKERS)


def _slots(sql: str, params: Any, markers: list[str | int]) -> tuple[tuple[int, int, type | None], ...]:
    """Where each value goes among the parameters; ValueError when a value is not a
    parameter of its own (changed by its lookup, inlined, or not used)."""
    index = {(_kind(marker), marker): n for n, marker in enumerate(markers)}
    slots = tuple(
        (position, index[_kind(p), p], None if type(p) in (str, int) else type(p))
        for position, p in enumerate(params)
        if _kind(p) is not None and (_kind(p), p) in index
    )
    texts = [m for m in markers if isinstance(m, str)]
    changed = [p for p in params if isinstance(p, str) and (str, p) not in index and any(m in p for m in texts)]
    inlined = any(str(marker) in sql for marker in markers)
    if changed or inlined or {n for _, n, _ in slots} != set(range(len(markers))):
        raise ValueError("each value of a prepared read must be a parameter of an exact lookup, used as given")
    return slots


def _kind(param: Any) -> type | None:
    """``str`` or ``int`` for a parameter that may be a marker (of a subclass too), else None."""
    if isinstance(param, str):
        return str
    return int if isinstance(param, int) and not isinstance(param, bool) else None


def _attnames(queryset: QuerySet, compiler: Any) -> tuple[str, ...]:
    """The attribute each column sets on an instance (none for a values_list read);
    TypeError for a queryset whose rows are neither plain instances nor tuples."""
    kind = queryset._iterable_class
    if kind in (ValuesListIterable, FlatValuesListIterable):
        query, named = queryset.query, list(queryset._fields)  # type: ignore[attr-defined]
        names = [*query.extra_select, *query.values_select, *query.annotation_select]
        if named and [*named, *(f for f in query.annotation_select if f not in named)] != names:
            raise TypeError("a prepared values_list read names its columns in the query's order")
        return ()
    if kind is not ModelIterable or queryset.query.select_related or compiler.annotation_col_map:
        raise TypeError("a prepared read gives plain model instances or values_list tuples")
    info = compiler.klass_info
    if info is None or compiler.query.extra_select:
        raise TypeError("a prepared read of instances selects only the model's own columns")
    return tuple(column[0].target.attname for column in compiler.select[: compiler.col_count])


def _converted(row: tuple, converters: tuple, connection: Any) -> list:
    values = list(row)
    for column, convs, expression in converters:
        value = values[column]
        for convert in convs:
            value = convert(value, expression, connection)
        values[column] = value
    return values
