"""Tests for the Uniform Tool Contract: pure Python, no Django.

Small helpers shared by the modules: a fresh tool name per test (the spec
table is process-wide) and ``call`` for running a dispatch wrapper.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Callable
from typing import Any

_serial = itertools.count()


def fresh_name(label: str = "tool") -> str:
    """A tool name no other test has registered."""
    return f"test_contract.{label}.{next(_serial)}"


def call(dispatch: Callable[[dict, dict], Any], inputs: dict | None = None, context: dict | None = None) -> Any:
    """Invoke a dispatch wrapper as the registry would, awaiting it if it is async."""
    result = dispatch(inputs or {}, context or {})
    if inspect.iscoroutine(result):
        return asyncio.run(result)
    return result
