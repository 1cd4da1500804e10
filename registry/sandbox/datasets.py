"""What data a custom tool's run starts with: ``df`` and ``datasets``, read for its caller.

The registry knows no conversation; the conversations app provides a
``DatasetSource`` (see ``provide``) that lists the datasets the caller may read.
A run gets the conversation's default dataset as ``df`` and every readable
dataset by name in ``datasets``, within a byte budget: a dataset past it arrives
as a ``DatasetTooLarge`` that refuses any use and names the limit. Datasets are
loaded only when the tool's code names ``df`` or ``datasets`` at all.

The host imports ``for_run``; the zygote imports ``DatasetTooLarge`` (a run
unpickles it), so nothing here imports Django at module level.
"""

from __future__ import annotations

import functools
import io
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from registry.context import ToolContext
from registry.installed import Port
from registry.sandbox.refusal import SandboxRefusal

_DATA_NAMES = frozenset({"df", "datasets", "frames"})


@dataclass(frozen=True, slots=True)
class StoredDataset:
    """One dataset the caller may read: its name, a lower bound of its size in memory
    (checked before loading it), and how to load it (the frame and its size in memory)."""

    name: str
    least_bytes: int
    load: Callable[[], tuple[Any, int]]


class DatasetSource(Protocol):
    def readable(self, context: ToolContext) -> tuple[str | None, list[StoredDataset]]:
        """The default dataset's name and every dataset the context's caller may read
        (newest first); ``(None, [])`` when it may read none."""


_sources: Port[DatasetSource] = Port("dataset source", "conversations")
provide = _sources.install  # the conversations app installs its catalog's, when Django starts


class DatasetTooLarge:
    """Stands in for a dataset over the run's budget: any use is refused, naming the limit."""

    __slots__ = ("_name", "_size", "_limit")

    def __init__(self, name: str, size: int, limit: int) -> None:
        self._name, self._size, self._limit = name, size, limit

    def _refusal(self) -> SandboxRefusal:
        return SandboxRefusal(
            f"the dataset {self._name!r} is {self._size / 1e6:.1f} MB; a custom tool may read at most "
            f"{self._limit / 1e6:.1f} MB of datasets (EUNICE_SANDBOX_DATASET_MB) — narrow it first, "
            "e.g. with query and save_as"
        )

    def __getattr__(self, name: str) -> Any:
        raise self._refusal()

    def __getitem__(self, key: Any) -> Any:
        raise self._refusal()

    def __len__(self) -> int:
        raise self._refusal()

    def __iter__(self) -> Any:
        raise self._refusal()

    def __repr__(self) -> str:
        return f"<dataset {self._name!r}: {self._size / 1e6:.1f} MB, over the custom-tool limit>"

    def __reduce__(self) -> tuple:
        return (DatasetTooLarge, (self._name, self._size, self._limit))


@functools.lru_cache(maxsize=512)
def names_used(code: str) -> frozenset[str]:
    """The data names (df, datasets, frames) the code mentions: sandboxed code reaches a
    name only by writing it (no globals(), vars() or getattr on a module), so a tool that
    never writes ``df`` needs nothing loaded."""
    found: set[str] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.NAME and token.string in _DATA_NAMES:
                found.add(token.string)
    except (tokenize.TokenError, SyntaxError):
        return _DATA_NAMES  # the compiler will refuse it; load as if it used everything
    return frozenset(found)


def for_run(code: str, context: ToolContext, budget_bytes: int) -> dict[str, Any]:
    """``{"default": df, "frames": {name: frame}}`` for a run of ``code`` for ``context``'s
    caller, at most ``budget_bytes`` of frames in memory (the default dataset first)."""
    used = names_used(code)
    source = _sources.installed()
    if source is None or not used:
        return {}
    default, stored = source.readable(context)
    if not used & {"datasets", "frames"}:
        stored = [item for item in stored if item.name == default]
    stored.sort(key=lambda item: item.name != default)  # stable: the default, then newest first
    frames: dict[str, Any] = {}
    left = budget_bytes
    for item in stored:
        frame, size = item.load() if item.least_bytes <= left else (None, item.least_bytes)
        if frame is None or size > left:
            frames[item.name] = DatasetTooLarge(item.name, size, budget_bytes)
            continue
        left -= size
        frames[item.name] = frame
    return {"default": frames.get(default) if default else None, "frames": frames}
