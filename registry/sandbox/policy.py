"""The language layer: RestrictedPython plus guards that keep ordinary pandas working.

Every attribute read in tool code goes through ``guarded_getattr``; ``pd`` and
``np`` are allowlist facades, so no expression yields a module, a file or URL
reader, a pickle loader, a frame or a code object. No Django import: the
zygote loads this module.
"""

from __future__ import annotations

import ast
import re
import types
from collections.abc import Callable
from typing import Any

from RestrictedPython.transformer import INSPECT_ATTRIBUTES


class SandboxRefusal(Exception):
    """The language layer refused an operation; the message names what and why."""


_DENIED_ATTRIBUTES = frozenset(
    {
        # file, clipboard and database writers/readers and pickles
        "to_pickle", "to_parquet", "to_feather", "to_hdf", "to_sql", "to_excel", "to_stata",
        "to_orc", "to_clipboard", "to_latex", "to_html", "to_xml", "to_gbq", "to_xarray",
        "tofile", "dump", "dumps", "load", "save", "fromfile",
        # raw memory and foreign-function access
        "ctypes", "ctypeslib",
        # renderers that import template engines and plotting libraries
        "style", "plot", "hist", "boxplot",
        # pandas extension registries: would change what later code sees
        "register_dataframe_accessor", "register_series_accessor", "register_index_accessor",
        "options", "set_option", "reset_option",
    }
)
_NO_PATH_WRITERS = frozenset({"to_csv", "to_json", "to_string", "to_markdown"})
_STRING_DISPATCH = frozenset({"agg", "aggregate", "apply", "transform", "pivot_table"})
_EXPRESSION_METHODS = frozenset({"query", "eval"})
_BLOCKED_VALUE_TYPES = (
    types.ModuleType, types.FrameType, types.CodeType, types.TracebackType,
)
ALLOWED_FUNCTION_NAMES = frozenset(
    {
        "sum", "mean", "median", "min", "max", "count", "size", "std", "var", "sem", "first",
        "last", "nunique", "prod", "any", "all", "idxmin", "idxmax", "cumsum", "cumprod",
        "cummin", "cummax", "rank", "skew", "kurt", "quantile", "mode", "abs", "diff",
        "pct_change", "shift", "nlargest", "nsmallest", "describe", "unique",
        "value_counts", "ohlc", "ffill", "bfill", "round", "head", "tail",
    }
)


def refuse(what: str) -> SandboxRefusal:
    return SandboxRefusal(f"{what} is not allowed in a custom tool")


def guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    """``getattr`` for tool code; raises SandboxRefusal for anything outside the policy."""
    if not isinstance(name, str):
        raise TypeError("attribute name must be a string")
    if name.startswith("_") or name in INSPECT_ATTRIBUTES or name in _DENIED_ATTRIBUTES:
        raise refuse(f"the attribute {name!r}")
    if isinstance(obj, (str, bytes)) and name in ("format", "format_map"):
        raise refuse("str.format (use an f-string)")
    try:
        value = getattr(obj, name)
    except AttributeError:
        if default:
            return default[0]
        raise
    return _vet_value(name, value)


def _vet_value(name: str, value: Any) -> Any:
    if isinstance(value, _BLOCKED_VALUE_TYPES):
        raise refuse(f"{name!r}, which is a {type(value).__name__},")
    if name in _STRING_DISPATCH and callable(value):
        return _checked_dispatch(value)
    if name in _NO_PATH_WRITERS and callable(value):
        return _without_path(value)
    if name in _EXPRESSION_METHODS and callable(value):
        return _vetted_expression(value)
    return value


def guarded_getitem(obj: Any, key: Any) -> Any:
    value = obj[key]
    if isinstance(value, _BLOCKED_VALUE_TYPES):
        raise refuse(f"an item that is a {type(value).__name__}")
    return value


def check_function_names(value: Any) -> None:
    """Refuse pandas' string dispatch ('to_csv' as an aggregation) outside the allowlist."""
    if isinstance(value, str):
        if value not in ALLOWED_FUNCTION_NAMES:
            raise refuse(f"the function name {value!r}")
    elif isinstance(value, dict):
        for item in value.values():
            check_function_names(item)
    elif isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        check_function_names(value[1])  # named aggregation: (column, function)
    elif isinstance(value, (list, tuple)):
        for item in value:
            check_function_names(item)


_FUNCTION_KEYWORDS = ("func", "arg", "aggfunc")


def _checked_dispatch(method: Callable) -> Callable:
    def call(*args: Any, **kwargs: Any) -> Any:
        if args:
            check_function_names(args[0])
        for key in _FUNCTION_KEYWORDS:
            if key in kwargs:
                check_function_names(kwargs[key])
        for key, value in kwargs.items():
            if isinstance(value, tuple):
                check_function_names(value)
        return method(*args, **kwargs)

    return call


def _without_path(method: Callable) -> Callable:
    def call(*args: Any, **kwargs: Any) -> Any:
        targets = [args[0]] if args else []
        targets += [kwargs.get(key) for key in ("path_or_buf", "buf", "path")]
        if any(target is not None for target in targets):
            raise refuse("writing to a file or buffer (call it without a path to get a string)")
        return method(*args, **kwargs)

    return call


_ALLOWED_EXPRESSION_NODES = (
    ast.Expression, ast.Compare, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant,
    ast.List, ast.Tuple, ast.Load, ast.operator, ast.boolop, ast.cmpop, ast.unaryop,
)
_BACKTICKED = re.compile(r"`[^`]*`")


def vet_expression(expression: Any) -> None:
    """Allow comparisons and arithmetic over columns and literals: no @, attributes or calls."""
    if not isinstance(expression, str) or "@" in expression:
        raise refuse("a query/eval expression with @ or that is not a string")
    try:
        tree = ast.parse(_BACKTICKED.sub("column", expression).replace("\n", " "), mode="eval")
    except SyntaxError as exc:
        raise SandboxRefusal(f"the expression does not parse: {exc.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_EXPRESSION_NODES):
            raise refuse(f"{type(node).__name__} in a query/eval expression")


def _vetted_expression(method: Callable) -> Callable:
    def call(expr: Any, *args: Any, **kwargs: Any) -> Any:
        vet_expression(expr)
        if kwargs.get("engine", "numexpr") != "numexpr" or kwargs.get("local_dict") or kwargs.get(
            "global_dict"
        ):
            raise refuse("query/eval with another engine or scope")
        kwargs["engine"] = "numexpr"
        return method(expr, *args, **kwargs)

    return call


def checked_function(func: Callable, keyword: str, position: int) -> Callable:
    """Wrap a module-level function (pd.pivot_table) whose ``keyword`` argument may be a name."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if len(args) > position:
            check_function_names(args[position])
        if keyword in kwargs:
            check_function_names(kwargs[keyword])
        return func(*args, **kwargs)

    return call


def names_are_ascii(code: str) -> list[str]:
    """Identifiers outside ASCII (fullwidth letters normalise to other names): one line each."""
    import io
    import tokenize

    problems = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.NAME and not token.string.isascii():
                problems.append(f"line {token.start[0]}: identifier {token.string!r} is not ASCII")
    except (tokenize.TokenError, SyntaxError) as exc:
        problems.append(f"the code does not tokenize: {exc}")
    return problems

