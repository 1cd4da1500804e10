"""Inside a run: compile tool code under RestrictedPython, execute it, render ``result``.

What leaves the run is data — text and JSON — never an object whose methods
could run in the host. No Django import: the zygote loads this module.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from RestrictedPython import compile_restricted_exec
from RestrictedPython.Eval import default_guarded_getiter
from RestrictedPython.Guards import (
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safe_builtins,
)
from RestrictedPython.PrintCollector import PrintCollector

from registry.sandbox.datasets import DatasetTooLarge  # noqa: F401 - a run unpickles it; the zygote preloads it
from registry.sandbox.facade import build_numpy, build_pandas
from registry.sandbox.policy import SandboxRefusal, guarded_getattr, guarded_getitem, names_are_ascii

TABLE_ROWS, TABLE_COLUMNS = 30, 15
_WRITABLE_ATTRIBUTES = frozenset({"columns", "index", "name", "names"})
_DROPPED_BUILTINS = ("setattr", "delattr", "_getattr_", "__build_class__", "id")
_EXTRA_BUILTINS = {
    name: __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)
    for name in (
        "list",
        "dict",
        "tuple",
        "set",
        "frozenset",
        "sorted",
        "reversed",
        "min",
        "max",
        "sum",
        "zip",
        "enumerate",
        "map",
        "filter",
        "any",
        "all",
        "iter",
        "next",
    )
}


class ToolCodeError(Exception):
    """The tool's code did not compile under the sandbox's rules."""


def _builtins() -> dict[str, Any]:
    builtins = {k: v for k, v in safe_builtins.items() if k not in _DROPPED_BUILTINS}
    builtins.update(_EXTRA_BUILTINS)
    builtins["__import__"] = _no_import
    for name in _REFUSED_BUILTINS:
        builtins[name] = _refused(name)
    builtins["getattr"] = guarded_getattr
    builtins["hasattr"] = _guarded_hasattr
    return builtins


_REFUSED_BUILTINS = (
    "open",
    "exec",
    "eval",
    "compile",
    "globals",
    "locals",
    "vars",
    "breakpoint",
    "input",
    "memoryview",
    "help",
    "exit",
    "quit",
    "type",
    "object",
    "super",
    "classmethod",
    "staticmethod",
)


def _refused(name: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise SandboxRefusal(f"{name}() is not allowed in a custom tool")

    return refuse


def _no_import(name: str, *args: Any, **kwargs: Any) -> Any:
    raise SandboxRefusal(f"importing {name!r} is not allowed in a custom tool (use pd and np)")


def _guarded_hasattr(obj: Any, name: str) -> bool:
    try:
        guarded_getattr(obj, name)
    except (AttributeError, SandboxRefusal):
        return False
    return True


class _Writable:
    """What ``_write_`` returns: item assignment on data, attribute assignment on a few names."""

    __slots__ = ("_target",)
    _target: Any

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._target[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._target[key]

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _WRITABLE_ATTRIBUTES or not isinstance(self._target, _DATA_TYPES):
            raise SandboxRefusal(f"setting the attribute {name!r} is not allowed in a custom tool")
        setattr(self._target, name, value)

    def __delattr__(self, name: str) -> None:
        raise SandboxRefusal("deleting attributes is not allowed in a custom tool")


_DATA_TYPES = (pd.DataFrame, pd.Series, pd.Index)
_ITEM_WRITABLE = (dict, list, np.ndarray, *_DATA_TYPES)


def _write(target: Any) -> Any:
    # pandas indexers (df.loc, df.iloc, df.at) are written through, never replaced.
    if isinstance(target, _ITEM_WRITABLE) or type(target).__module__.startswith("pandas.core.indexing"):
        return _Writable(target)
    raise SandboxRefusal(f"changing a {type(target).__name__} is not allowed in a custom tool")


def _inplace(op: str, x: Any, y: Any) -> Any:
    return _INPLACE[op](x, y)


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": lambda x, y: x + y,
    "-=": lambda x, y: x - y,
    "*=": lambda x, y: x * y,
    "/=": lambda x, y: x / y,
    "//=": lambda x, y: x // y,
    "%=": lambda x, y: x % y,
    "**=": lambda x, y: x**y,
    "|=": lambda x, y: x | y,
    "&=": lambda x, y: x & y,
}


def compile_tool(code: str) -> Any:
    """Compile ``code`` under RestrictedPython; raises ToolCodeError with every problem."""
    problems = names_are_ascii(code) or _imports(code)
    if not problems:
        compiled = compile_restricted_exec(code, filename="<custom tool>")
        problems = list(compiled.errors)
    if problems:
        raise ToolCodeError("; ".join(problems))
    return compiled.code


def _imports(code: str) -> list[str]:
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []  # RestrictedPython reports it with its own message
    return [
        f"line {node.lineno}: import statements are not allowed (use pd and np)"
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]


def namespace(
    inputs: dict,
    df: Any,
    call_tool: Callable[[str, dict], str],
    frames: dict[str, Any] | None = None,
    call: Callable[..., Any] | None = None,
) -> dict[str, Any]:
    """The globals tool code runs with: ``df`` (the default dataset or None),
    ``datasets`` (every dataset it may read, by name, read-only), ``frames``
    (the same, writable: analyze_data saves what is added), ``pd``, ``np``,
    ``inputs``, ``call_tool`` (a tool's text), ``call`` (a tool's data) and ``result``."""
    frames = frames if frames is not None else {}
    return {
        "__builtins__": _builtins(),
        "__name__": "custom_tool",
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": default_guarded_getiter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_write_": _write,
        "_inplacevar_": _inplace,
        "_print_": PrintCollector,
        "_apply_": lambda func, *args, **kwargs: func(*args, **kwargs),
        "df": df,
        "datasets": types.MappingProxyType(dict(frames)),
        "frames": frames,
        "pd": build_pandas(),
        "np": build_numpy(),
        "inputs": inputs,
        "call_tool": call_tool,
        "call": call,
        "result": None,
    }


def render(result: Any) -> dict[str, Any]:
    """The run's answer as data: a table's text, a full-response dict, or a string."""
    if isinstance(result, (pd.DataFrame, pd.Series)):
        if isinstance(result, pd.Series):
            text = result.to_string(max_rows=TABLE_ROWS)
        else:
            text = result.to_string(max_rows=TABLE_ROWS, max_cols=TABLE_COLUMNS)
        return {"kind": "table", "text": text, "rows": int(len(result))}
    if isinstance(result, dict) and "message" in result:
        return {"kind": "response", "response": json.loads(json.dumps(result, default=str))}
    return {"kind": "text", "text": "" if result is None else str(result)}


def frame_payload(frame: Any) -> dict[str, Any]:
    """A DataFrame as plain JSON data (split orientation, ISO dates) plus its dtypes.

    This, never a pickle, is how a table leaves a run; the host rebuilds the frame.
    """
    if isinstance(frame, pd.Series):
        frame = frame.to_frame("value" if frame.name is None else str(frame.name))
    if not isinstance(frame.index, pd.RangeIndex):
        frame = frame.reset_index()
    frame = frame.set_axis([str(column) for column in frame.columns], axis=1)
    return {
        "split": frame.to_json(orient="split", index=False, date_format="iso"),
        "dtypes": {str(column): str(dtype) for column, dtype in frame.dtypes.items()},
    }


def frames_answer(result: Any, frames: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The result table and the frames the code added to or replaced in ``frames``."""
    answer: dict[str, Any] = {"frames": {}}
    if isinstance(result, (pd.DataFrame, pd.Series)):
        answer["frame"] = frame_payload(result)
    for name, frame in frames.items():
        if isinstance(name, str) and isinstance(frame, pd.DataFrame) and given.get(name) is not frame:
            answer["frames"][name] = frame_payload(frame)
    return answer
