"""Reads whose SQL Django composes once per process and database, then runs with new values.

Building a queryset and compiling it to SQL is most of what a small read costs:
the state block's observations took 1,000 µs of CPU through the ORM against 80 µs
for running the same SQL (a loaded machine; the ratio is what counts), and a
turn makes about twenty such reads before its first chunk (bench/turn_start.py).
A ``Prepared`` read is a queryset built by a function of its values. It is
compiled once per database with a marker in place of each value; later reads
put the values where the markers were and convert the columns as the ORM does
(``from_db_value``: JSON, datetimes on SQLite). The counterpart of
``conversations.inserts`` for reads; ``PreparedUpdate`` does the same for an UPDATE.

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
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from django.db import connections, router, transaction
from django.db.models import Model, QuerySet
from django.db.models.query import FlatValuesListIterable, ModelIterable, ValuesListIterable
from django.db.models.sql import UpdateQuery

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
        found = _known(self._compiled, self._model, router.db_for_read, len(values))
        alias, compiled = found if found is not None else self._compile(values)
        connection = connections[alias]
        params = _filled(compiled.params, compiled.slots, values)
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


class PreparedUpdate:
    """An UPDATE built by ``build(*values)``: a queryset of one table and the fields it
    sets (``{name: value or expression}``), composed once per database and number of
    values, then run with new values; returns how many rows it changed, as
    ``QuerySet.update`` does (no signals, no ``auto_now``). Values are as for ``Prepared``,
    and an aware ``datetime`` may also be set on a DateTimeField; a value of another kind
    (a naive datetime) goes through the ORM."""

    def __init__(self, build: Callable[..., tuple[QuerySet, dict[str, Any]]]) -> None:
        self._build = build
        self._compiled: dict[tuple[str, int], tuple[str, tuple[Any, ...], tuple[tuple[int, int, Any], ...]]] = {}
        self._model: type[Model] | None = None

    def __call__(self, *values: str | int | datetime) -> int:
        if not all(_update_kind(value) is not None for value in values):
            queryset, changes = self._build(*values)
            return queryset.update(**changes)
        found = _known(self._compiled, self._model, router.db_for_write, len(values))
        alias, (sql, constants, slots) = found if found is not None else self._compile(values)
        connection = connections[alias]
        params = _filled(constants, slots, values)
        with transaction.mark_for_rollback_on_error(using=alias), connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.rowcount

    def _compile(self, values: tuple[str | int | datetime, ...]) -> tuple[str, Any]:
        markers = [_update_marker(value) for value in values]
        queryset, changes = self._build(*markers)
        alias = router.db_for_write(queryset.model)
        query: Any = queryset.order_by().query.chain(UpdateQuery)
        query.add_update_values(changes)
        if query.related_updates:
            raise TypeError("a prepared update sets the columns of one table")
        connection = connections[alias]
        sql, params = query.get_compiler(alias).as_sql()
        dates = {n: marker for n, marker in enumerate(markers) if isinstance(marker, datetime)}
        slots: list[tuple[int, int, Any]] = list(_slots(sql, params, markers, skip=frozenset(dates)))
        adapt = connection.ops.adapt_datetimefield_value  # what a DateTimeField does to an aware value
        for n, marker in dates.items():
            adapted = adapt(marker)
            found = [position for position, p in enumerate(params) if type(p) is type(adapted) and p == adapted]
            if len(found) != 1:
                raise ValueError("each datetime of a prepared update must be a field's new value, used as given")
            slots.append((found[0], n, adapt))
        compiled = (sql, tuple(params), tuple(slots))
        with _lock:
            self._model = queryset.model
            self._compiled[alias, len(values)] = compiled
        return alias, compiled


def _known(compiled: dict[tuple[str, int], Any], model: type[Model] | None, route: Callable, count: int) -> Any:
    """(database, its compiled query) for ``count`` values, when composed already; else None."""
    if model is None:
        return None
    alias = route(model)
    found = compiled.get((alias, count))
    return None if found is None else (alias, found)


def _filled(constants: tuple[Any, ...], slots: tuple[tuple[int, int, Any], ...], values: tuple[Any, ...]) -> list[Any]:
    """The parameters: ``constants`` with each value put in its slot, cast or adapted as the ORM would."""
    params = list(constants)
    for position, index, cast in slots:
        params[position] = values[index] if cast is None else cast(values[index])
    return params


def _update_kind(value: Any) -> type | None:
    if isinstance(value, datetime):
        return datetime if value.tzinfo is not None and value.utcoffset() is not None else None
    return _kind(value)


def _update_marker(value: str | int | datetime) -> str | int | datetime:
    """A stand-in for ``value``, as ``_marker``; for a datetime, an instant of 1970 found nowhere else."""
    if isinstance(value, datetime):
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=next(_MARKERS) + 1)
    return _marker(value)


def _marker(value: str | int) -> str | int:
    """A stand-in for ``value`` (text or an integer) when the query is composed, of its type,
    found nowhere else."""
    return f"\x00prepared-{next(_MARKERS)}\x00" if isinstance(value, str) else _INT_MARKERS + next(_MARKERS)


def _slots(
    sql: str,
    params: Any,
    markers: list[Any],
    skip: frozenset[int] = frozenset(),
) -> tuple[tuple[int, int, type | None], ...]:
    """Where each value goes among the parameters; ValueError when a value is not a
    parameter of its own (changed by its lookup, inlined, or not used). The values
    at the indexes in ``skip`` are placed by the caller."""
    index = {(_kind(marker), marker): n for n, marker in enumerate(markers) if n not in skip}
    slots = tuple(
        (position, index[_kind(p), p], None if type(p) in (str, int) else type(p))
        for position, p in enumerate(params)
        if _kind(p) is not None and (_kind(p), p) in index
    )
    texts = [m for n, m in enumerate(markers) if isinstance(m, str) and n not in skip]
    changed = [p for p in params if isinstance(p, str) and (str, p) not in index and any(m in p for m in texts)]
    inlined = any(str(marker) in sql for n, marker in enumerate(markers) if n not in skip)
    if changed or inlined or {n for _, n, _ in slots} != set(range(len(markers))) - skip:
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
