"""JSON from outside the process, parsed within a depth and a size limit.

The standard library's parser recurses once per nested array or object, so a
few kilobytes of ``[[[[…`` raise RecursionError, an exception nobody catches
as bad input (a REST 500, a dead websocket, a crashed turn). Everything
parsed here is checked *before* it is parsed, by a scan that never recurses;
a value built elsewhere (a dict an SDK handed us) is checked by an iterative
walk. Both raise ``JSONTooDeep`` (a ``ValueError``), whose message names the
limit and its setting.

Used for REST bodies (``BoundedJSONParser``), websocket frames, tool
arguments, model output, MCP and sandbox results and uploaded JSON.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

import orjson
from django.conf import settings

# A JSON string (escapes included): its brackets are text, not nesting.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRING_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NOT_BRACKET_BYTES = re.compile(rb"[^\[\]{}]+")
_CONTAINERS = (dict, list, tuple)
_STEP = [1 if byte in b"[{" else -1 for byte in range(256)]


class JSONTooDeep(ValueError):
    """The JSON nests deeper than the limit; the message names it and its setting."""

    def __init__(self, limit: int, what: str = "the JSON") -> None:
        super().__init__(f"{what} is nested deeper than {limit} levels, the limit (EUNICE_JSON_MAX_DEPTH)")
        self.limit = limit


class JSONTooLarge(ValueError):
    """The JSON text is longer than the caller's byte limit."""

    def __init__(self, size: int, limit: int, what: str = "the JSON", unit: str = "bytes") -> None:
        super().__init__(f"{what} is {size:,} {unit}; the limit is {limit:,}")
        self.size, self.limit = size, limit


def max_depth() -> int:
    """The deployment's depth limit (EUNICE_JSON_MAX_DEPTH)."""
    return settings.JSON_MAX_DEPTH


def loads_bounded(
    data: str | bytes | bytearray,
    *,
    max_depth: int | None = None,
    max_bytes: int | None = None,
    what: str = "the JSON",
    **json_options: Any,
) -> Any:
    """``json.loads(data)`` once ``data`` is known to fit the limits.

    Parsed by orjson (several times faster on large documents), or by json
    with ``json_options`` for what orjson refuses (NaN, a lone surrogate, an
    integer past 64 bits), so the result and the errors are json's.
    Raises JSONTooLarge (longer than ``max_bytes``, counted in characters for a str), JSONTooDeep (deeper than
    ``max_depth``, default EUNICE_JSON_MAX_DEPTH) or json.JSONDecodeError, as
    json.loads does; never RecursionError.
    """
    if max_bytes is not None and len(data) > max_bytes:
        raise JSONTooLarge(len(data), max_bytes, what, "characters" if isinstance(data, str) else "bytes")
    check_text_depth(data, max_depth, what=what)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data, **json_options)


def check_text_depth(data: str | bytes | bytearray, limit: int | None = None, *, what: str = "the JSON") -> None:
    """Raise JSONTooDeep if the brackets of ``data`` (outside strings) nest deeper than ``limit``.

    Linear and without recursion: strings and everything but brackets are cut
    out by regular expressions, then the running depth is summed. Text that is
    not valid JSON is left for the parser to refuse.
    """
    limit = settings.JSON_MAX_DEPTH if limit is None else limit
    text = bytes(data) if isinstance(data, bytearray) else data
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= limit:  # the common case: too few brackets to matter
            return
        brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).encode("ascii")
    else:
        if text.count(b"[") + text.count(b"{") <= limit:
            return
        brackets = _NOT_BRACKET_BYTES.sub(b"", _STRING_BYTES.sub(b"", text))
    if _deepest(brackets) > limit:
        raise JSONTooDeep(limit, what)


def _deepest(brackets: bytes) -> int:
    # The running sum of +1 per opening and -1 per closing bracket, in C (accumulate, map).
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def check_depth(value: Any, limit: int | None = None, *, what: str = "the value") -> None:
    """Raise JSONTooDeep if ``value`` (dicts, lists and tuples) nests deeper than ``limit``.

    For values already built (an SDK's parsed result, tool arguments handed
    over as a dict). Iterative, so any depth is measured without recursing;
    it stops at the first branch past the limit. A flat value (the common
    tool call) costs one pass over its top level: this runs on every dispatch.
    """
    if not isinstance(value, _CONTAINERS):
        return
    for child in value.values() if isinstance(value, dict) else value:
        if isinstance(child, _CONTAINERS):
            break
    else:
        return
    limit = settings.JSON_MAX_DEPTH if limit is None else limit
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise JSONTooDeep(limit, what)
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, _CONTAINERS):
                stack.append((child, depth + 1))
