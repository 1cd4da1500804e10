"""The language layer: RestrictedPython plus guards that keep ordinary pandas working.

Every attribute read in tool code goes through ``guarded_getattr``; ``pd`` and
``np`` are allowlist facades, so no expression yields a module, a file or URL
reader, a pickle loader, a frame or a code object.

pandas evaluates some strings as code: expressions (``DataFrame.eval`` and
``query``) and function names (``agg('sum')`` looks ``sum`` up with getattr).
Every method or function that does is a row of ``ENTRY_POINTS``, and every
call of one goes through ``vet_call`` before pandas sees its arguments.
No Django import: the zygote loads this module.
"""

from __future__ import annotations

import ast
import functools
import inspect
import tokenize
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pandas.core.computation.expr import PandasExprVisitor
from pandas.core.computation.ops import LOCAL_TAG, MATHOPS
from pandas.core.groupby.groupby import GroupBy
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from registry.sandbox.refusal import SandboxRefusal

_DENIED_ATTRIBUTES = frozenset(
    {
        # file, clipboard and database writers/readers and pickles
        "to_pickle",
        "to_parquet",
        "to_feather",
        "to_hdf",
        "to_sql",
        "to_excel",
        "to_stata",
        "to_orc",
        "to_clipboard",
        "to_latex",
        "to_html",
        "to_xml",
        "to_gbq",
        "to_xarray",
        "tofile",
        "dump",
        "dumps",
        "load",
        "save",
        "fromfile",
        # raw memory and foreign-function access
        "ctypes",
        "ctypeslib",
        # renderers that import template engines and plotting libraries
        "style",
        "plot",
        "hist",
        "boxplot",
        # pandas extension registries: would change what later code sees
        "register_dataframe_accessor",
        "register_series_accessor",
        "register_index_accessor",
        "options",
        "set_option",
        "reset_option",
    }
)
_NO_PATH_WRITERS = frozenset({"to_csv", "to_json", "to_string", "to_markdown"})
_BLOCKED_VALUE_TYPES = (
    types.ModuleType,
    types.FrameType,
    types.CodeType,
    types.TracebackType,
)
ALLOWED_FUNCTION_NAMES = frozenset(
    {
        "sum",
        "mean",
        "median",
        "min",
        "max",
        "count",
        "size",
        "std",
        "var",
        "sem",
        "first",
        "last",
        "nunique",
        "prod",
        "any",
        "all",
        "idxmin",
        "idxmax",
        "cumsum",
        "cumprod",
        "cummin",
        "cummax",
        "rank",
        "skew",
        "kurt",
        "quantile",
        "mode",
        "abs",
        "diff",
        "pct_change",
        "shift",
        "nlargest",
        "nsmallest",
        "describe",
        "unique",
        "value_counts",
        "ohlc",
        "ffill",
        "bfill",
        "round",
        "head",
        "tail",
    }
)


def refuse(what: str, instead: str = "") -> SandboxRefusal:
    """A refusal naming what was refused and, when there is one, the safe equivalent."""
    hint = f"; instead, {instead}" if instead else ""
    return SandboxRefusal(f"{what} is not allowed in a custom tool{hint}")


def attribute_refusal(name: str) -> SandboxRefusal | None:
    """Why tool code may not read the attribute ``name`` (None when it may)."""
    if name.startswith("_") or name in INSPECT_ATTRIBUTES or name in _DENIED_ATTRIBUTES:
        return refuse(f"the attribute {name!r}")
    return None


def guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    """``getattr`` for tool code; raises SandboxRefusal for anything outside the policy."""
    if not isinstance(name, str):
        raise TypeError("attribute name must be a string")
    refusal = attribute_refusal(name)
    if refusal is not None:
        raise refusal
    if isinstance(obj, (str, bytes)) and name in ("format", "format_map"):
        raise refuse("str.format", "use an f-string")
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
    if callable(value):
        if name in ENTRY_POINTS:
            return vetted(value, name)
        if name in _NO_PATH_WRITERS:
            return _without_path(value)
    return value


def guarded_getitem(obj: Any, key: Any) -> Any:
    value = obj[key]
    if isinstance(value, _BLOCKED_VALUE_TYPES):
        raise refuse(f"an item that is a {type(value).__name__}")
    return value


def _without_path(method: Callable) -> Callable:
    def call(*args: Any, **kwargs: Any) -> Any:
        targets = [args[0]] if args else []
        targets += [kwargs.get(key) for key in ("path_or_buf", "buf", "path")]
        if any(target is not None for target in targets):
            raise refuse("writing to a file or buffer", "call it without a path to get a string")
        return method(*args, **kwargs)

    return call


# --- string-evaluating entry points ------------------------------------------------


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """How one pandas method or function evaluates strings, and what a call may pass.

    ``functions`` are parameters whose strings pandas looks up as functions
    (every string in them must be in ALLOWED_FUNCTION_NAMES); with
    ``named_aggregation`` and no function given, every keyword argument is a
    named aggregation. ``expression`` is a parameter pandas parses as an
    expression, and ``keywords`` then lists the only other arguments accepted.
    ``choices`` limits parameters to listed strings. ``labels`` are function-like
    parameters whose strings pandas only ever reads as labels (recorded for the
    enumeration test, which trips pandas on them).
    """

    functions: tuple[str, ...] = ()
    named_aggregation: bool = False
    expression: str = ""
    keywords: frozenset[str] = frozenset()
    labels: tuple[str, ...] = ()
    choices: Mapping[str, frozenset[Any]] = field(default_factory=dict)


_EXPRESSION = EntryPoint(
    expression="expr",
    keywords=frozenset({"inplace", "engine", "parser"}),
    choices={"engine": frozenset({None, "numexpr"}), "parser": frozenset({"pandas"})},
)
# scipy.signal.windows functions pandas looks up by win_type (getattr on the module).
_WINDOW_TYPES = frozenset(
    {
        None,
        "boxcar",
        "triang",
        "blackman",
        "hamming",
        "bartlett",
        "parzen",
        "bohman",
        "blackmanharris",
        "nuttall",
        "barthann",
        "kaiser",
        "gaussian",
        "general_gaussian",
        "exponential",
        "tukey",
        "taylor",
        "cosine",
    }
)
# Engines a dispatching method may run on: pandas 3 also takes an object whose
# __pandas_udf__ runs the function, and "numba" compiles it.
_ENGINES = frozenset({None, "python", "cython"})

# Keyed by the attribute name, whatever object it is read from: a method of that
# name on any class (DataFrame, Series, GroupBy, Resampler, Rolling, …) is vetted.
ENTRY_POINTS: dict[str, EntryPoint] = {
    "agg": EntryPoint(functions=("func",), named_aggregation=True),
    "aggregate": EntryPoint(functions=("func",), named_aggregation=True),
    "apply": EntryPoint(functions=("func",)),
    "transform": EntryPoint(functions=("func", "arg")),  # Resampler.transform's is `arg`
    # GroupBy.filter('name') calls getattr(group, name); DataFrame.filter's arg is labels.
    "filter": EntryPoint(functions=("func",), labels=("arg",)),
    # Series.map takes an engine object (checked); the mapper is called or read as a mapping.
    "map": EntryPoint(labels=("func", "arg", "mapper")),
    "pivot_table": EntryPoint(functions=("aggfunc",)),
    "crosstab": EntryPoint(functions=("aggfunc",)),
    "eval": _EXPRESSION,
    "query": _EXPRESSION,
    "rolling": EntryPoint(choices={"win_type": _WINDOW_TYPES}),
}
# Methods with a function-like parameter that pandas never evaluates as a name or
# code: it is called, read as a mapping, or is data. The enumeration test trips
# pandas on each with a string to hold it to that.
NEVER_LOOKED_UP: dict[str, str] = {
    "to_datetime": "arg is the data to convert",
    "to_numeric": "arg is the data to convert",
    "to_timedelta": "arg is the data to convert",
    "pipe": "func is called (a (function, keyword) tuple names the keyword, not a function)",
    "combine": "func is called with two Series",
    "case_when": "conditions are arrays or callables",
    "rename": "mapper is called or read as a mapping of labels",
    "rename_axis": "mapper is a label, a mapping or a callable",
    "vectorize": "np.vectorize wraps the function it is given",
}
# Names the facades do not offer, with the safe equivalent the refusal names.
FACADE_HINTS: dict[str, str] = {
    "eval": "call df.eval('…') on a DataFrame (its names are the frame's columns)",
    "read_csv": "the tool's data arrives as df and datasets",
    "read_parquet": "the tool's data arrives as df and datasets",
    "read_json": "the tool's data arrives as df and datasets",
    "read_excel": "the tool's data arrives as df and datasets",
}


def vetted(func: Callable, name: str) -> Callable:
    """``func`` (the method or function called ``name``) behind ``vet_call``."""
    entry = ENTRY_POINTS[name]

    def call(*args: Any, **kwargs: Any) -> Any:
        target, args, kwargs = vet_call(func, name, entry, args, kwargs)
        return target(*args, **kwargs)

    return call


def vet_call(func: Callable, name: str, entry: EntryPoint, args: tuple, kwargs: dict) -> tuple[Callable, tuple, dict]:
    """The one gate for every string-evaluating call: check the arguments against
    ``entry``; return what to call and the arguments, every function spec rebuilt
    from checked parts (so code running during the call cannot swap a name in).

    Raises SandboxRefusal naming the argument and the rule; TypeError for
    arguments that do not fit ``func``'s signature.
    """
    target, receiver = func, getattr(func, "__self__", None)
    underlying = getattr(func, "__func__", None)
    if underlying is not None:  # a bound method: bind the receiver as the first argument
        target, args = underlying, (receiver, *args)
    bound = _signature(target).bind(*args, **kwargs)
    arguments = _flat_arguments(bound)
    if receiver is None or isinstance(receiver, type):
        receiver = arguments.get("self")
    for keyword in ("engine", "engine_kwargs"):
        if keyword in arguments and not entry.expression:
            _check_engine(name, keyword, arguments[keyword])
    for parameter, allowed in entry.choices.items():
        if parameter in arguments and arguments[parameter] not in allowed:
            raise refuse(
                f"{name}({parameter}={arguments[parameter]!r})",
                f"use one of {sorted(str(choice) for choice in allowed if choice)}",
            )
    if entry.expression:
        _vet_expression_call(name, entry, arguments, receiver)
        return target, bound.args, bound.kwargs
    pairs_are_labels = isinstance(receiver, GroupBy)
    for parameter in entry.functions:
        if bound.arguments.get(parameter) is not None:
            bound.arguments[parameter] = function_spec(bound.arguments[parameter], pairs_are_labels)
    if entry.named_aggregation and bound.arguments.get(entry.functions[0]) is None:
        _rebuild_named_aggregations(bound, pairs_are_labels)
    return target, bound.args, bound.kwargs


@functools.lru_cache(maxsize=1024)
def _signature(func: Callable) -> inspect.Signature:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        raise refuse(f"calling {getattr(func, '__name__', 'this')!r}, whose arguments cannot be checked,") from None


def _flat_arguments(bound: inspect.BoundArguments) -> dict[str, Any]:
    """The bound arguments with ``**kwargs`` spread out, as pandas will read them."""
    flat: dict[str, Any] = {}
    for parameter, value in bound.arguments.items():
        kind = bound.signature.parameters[parameter].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            flat.update(value)
        elif kind is not inspect.Parameter.VAR_POSITIONAL:
            flat[parameter] = value
    return flat


def _check_engine(name: str, keyword: str, value: Any) -> None:
    if keyword == "engine_kwargs" and value is not None:
        raise refuse(f"{name}(engine_kwargs=…)", "leave engine_kwargs out")
    if keyword == "engine" and (not isinstance(value, (str, type(None))) or value not in _ENGINES):
        raise refuse(f"{name}(engine={value!r})", "leave engine out (pandas picks a safe one)")


def function_spec(spec: Any, pairs_are_labels: bool = False) -> Any:
    """``spec`` (a name, a function, or a list/tuple/dict/NamedAgg of them) rebuilt
    from checked parts. Every string pandas could look up must be an allowed
    function name; a (label, function) pair's label is free only where pandas
    never looks it up (``pairs_are_labels``: a GroupBy's aggregations).

    Raises SandboxRefusal for another name or a container pandas would read as a
    list or mapping of functions (a Series, an array, a generator, a set).
    """
    if isinstance(spec, str):
        if spec not in ALLOWED_FUNCTION_NAMES:
            raise refuse(
                f"the function name {spec!r}",
                f"pass a function (lambda s: …) or one of {', '.join(sorted(ALLOWED_FUNCTION_NAMES))}",
            )
        return str(spec)
    if isinstance(spec, pd.NamedAgg):
        return pd.NamedAgg(spec.column, function_spec(spec.aggfunc), *spec.args, **spec.kwargs)
    if isinstance(spec, dict):
        return {key: function_spec(value, pairs_are_labels) for key, value in spec.items()}
    if isinstance(spec, (list, tuple)):
        items = [_pair_or_spec(item, pairs_are_labels) for item in spec]
        return items if isinstance(spec, list) else tuple(items)
    if callable(spec):
        return spec
    raise refuse(f"a {type(spec).__name__} of functions", "use a list, a tuple or a dict")


def _pair_or_spec(item: Any, pairs_are_labels: bool) -> Any:
    if pairs_are_labels and isinstance(item, tuple) and len(item) == 2:
        return (item[0], function_spec(item[1]))
    return function_spec(item, pairs_are_labels)


def _rebuild_named_aggregations(bound: inspect.BoundArguments, pairs_are_labels: bool) -> None:
    """``agg(total=('units', 'sum'))``: the column is a label, the function is checked."""
    for parameter, value in list(bound.arguments.items()):
        if bound.signature.parameters[parameter].kind is not inspect.Parameter.VAR_KEYWORD:
            continue
        rebuilt = {}
        for key, spec in value.items():
            if key in ("engine", "engine_kwargs"):
                rebuilt[key] = spec
            elif isinstance(spec, tuple) and len(spec) == 2:
                rebuilt[key] = (spec[0], function_spec(spec[1]))
            else:
                rebuilt[key] = function_spec(spec, pairs_are_labels)
        bound.arguments[parameter] = rebuilt


# --- expressions: DataFrame.eval / DataFrame.query ----------------------------------

# The exact preparser pandas runs before ast.parse (backticks, @ and &/| rewriting):
# the vetted tree is the tree pandas evaluates.
_PANDAS_PREPARSER: Callable[[str], str] = inspect.signature(PandasExprVisitor.__init__).parameters["preparser"].default
EXPRESSION_FUNCTIONS = frozenset(MATHOPS)
EXPRESSION_METHODS = frozenset(
    {
        "isin",
        "isna",
        "notna",
        "isnull",
        "notnull",
        "between",
        "contains",
        "startswith",
        "endswith",
        "match",
        "fullmatch",
        "lower",
        "upper",
        "strip",
        "len",
        "abs",
        "round",
    }
)
_OPERATOR_NODES = (ast.operator, ast.boolop, ast.cmpop, ast.unaryop, ast.expr_context)


def _vet_expression_call(name: str, entry: EntryPoint, arguments: dict, receiver: Any) -> None:
    extra = sorted(set(arguments) - entry.keywords - {entry.expression, "self"})
    if extra:
        raise refuse(
            f"{name}({', '.join(f'{key}=' for key in extra)}…)",
            "use the frame's columns in the expression and pass no scope",
        )
    if not isinstance(receiver, pd.DataFrame):
        raise refuse(f"{name}() on a {type(receiver).__name__}", "call it on a DataFrame")
    names = frozenset(receiver._get_cleaned_column_resolvers()) | frozenset(receiver._get_index_resolvers())
    vet_expression(arguments.get(entry.expression), names, assign=name == "eval")


def vet_expression(expression: Any, names: frozenset[str], *, assign: bool = False) -> None:
    """Check a pandas expression as pandas will parse it: each line through pandas'
    own preparser and ``ast.parse``, then the policy on the tree — names are the
    frame's columns (and ``index``), calls only EXPRESSION_FUNCTIONS and
    EXPRESSION_METHODS, attributes never private, no ``@`` variables, no
    subscripts. With ``assign`` a line may be ``column = expression``.

    Raises SandboxRefusal naming the part of the expression that broke the rule.
    """
    if not isinstance(expression, str):
        raise refuse(f"an expression that is a {type(expression).__name__}", "pass the expression as a string")
    known = set(names)
    for line in (part.strip() for part in expression.splitlines()):  # pandas parses each line alone
        if not line:
            continue
        try:
            tree = ast.parse(_PANDAS_PREPARSER(line))
        except (SyntaxError, tokenize.TokenError, ValueError) as exc:
            raise SandboxRefusal(f"the expression {line!r} does not parse: {getattr(exc, 'msg', exc)}") from None
        if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.Expr, ast.Assign)):
            raise refuse(f"the statement {line!r} in an expression", "write one expression per line")
        statement = tree.body[0]
        if isinstance(statement, ast.Assign):
            target = statement.targets[0]
            if not assign or len(statement.targets) != 1 or not isinstance(target, ast.Name):
                raise refuse(f"the assignment {line!r}", "assign in eval() only, to one column name")
            _check_name(target.id)
            known.add(target.id)
        _ExpressionCheck(frozenset(known), line).visit(statement.value)


def _check_name(name: str) -> None:
    if name.startswith(LOCAL_TAG):
        raise refuse(
            f"the @ variable @{name[len(LOCAL_TAG) :]} in an expression",
            "put the value into the string with an f-string, or into a column",
        )
    if name.startswith("_"):
        raise refuse(f"the name {name!r} in an expression")


class _ExpressionCheck(ast.NodeVisitor):
    """Walks one parsed expression; raises SandboxRefusal at the first node outside the policy."""

    def __init__(self, names: frozenset[str], line: str) -> None:
        self.names = names
        self.line = line

    def generic_visit(self, node: ast.AST) -> None:
        allowed = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant, ast.List, ast.Tuple)
        if not isinstance(node, allowed + _OPERATOR_NODES):
            raise refuse(
                f"{type(node).__name__} in the expression {self.line!r}",
                "compute it in Python with the frame's methods",
            )
        super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        _check_name(node.id)
        if node.id not in self.names:
            raise refuse(
                f"the name {node.id!r} in an expression (not a column of the frame)",
                "use the frame's columns, literals, or an f-string for a value",
            )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        refusal = attribute_refusal(node.attr)
        if refusal is not None:
            raise refusal
        self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in EXPRESSION_FUNCTIONS:
            pass
        elif isinstance(func, ast.Attribute) and func.attr in EXPRESSION_METHODS:
            self.visit(func.value)
        else:
            called = ast.unparse(func)
            raise refuse(
                f"calling {called!r} in an expression",
                f"call {', '.join(sorted(EXPRESSION_FUNCTIONS | EXPRESSION_METHODS))} only, or compute it in Python",
            )
        for argument in node.args:
            self.visit(argument)
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg.startswith("_"):
                raise refuse(f"the keyword argument in {self.line!r}")
            self.visit(keyword.value)


def facade_refusal(label: str, name: str) -> SandboxRefusal:
    """The refusal for a name a facade does not offer, naming the safe equivalent if known."""
    hint = FACADE_HINTS.get(name, "") if label == "pd" else ""
    suffix = f"; instead, {hint}" if hint else ""
    return SandboxRefusal(f"{label}.{name} is not available in a custom tool{suffix}")


def names_are_ascii(code: str) -> list[str]:
    """Identifiers outside ASCII (fullwidth letters normalise to other names): one line each."""
    import io

    problems = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.NAME and not token.string.isascii():
                problems.append(f"line {token.start[0]}: identifier {token.string!r} is not ASCII")
    except (tokenize.TokenError, SyntaxError) as exc:
        problems.append(f"the code does not tokenize: {exc}")
    return problems
