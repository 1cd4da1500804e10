"""Handlers: the Python callables behind tools, and how they are loaded."""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from registry.context import ToolContext

logger = logging.getLogger("eunice.registry")

HandlerFunc = Callable[[dict, "ToolContext"], Any]
Requirement = Callable[[], "str | None"]  # why the tool cannot run now, or None when it can
TenantRequirement = Callable[[str], "str | None"]  # why it cannot run for this tenant, or None


def requires(check: Requirement) -> Callable[[HandlerFunc], HandlerFunc]:
    """Mark a handler as able to run only while ``check()`` returns None (else: why not).

    Put it above the handler's other decorators; the registry reads it when it
    registers the handler (registry.availability), and a tool whose check
    fails is not offered and answers its calls with a Hint saying why.
    """

    def mark(func: HandlerFunc) -> HandlerFunc:
        func.__requires__ = check  # type: ignore[attr-defined]
        return func

    return mark


def requires_tenant(check: TenantRequirement) -> Callable[[HandlerFunc], HandlerFunc]:
    """Mark a handler as able to run for a tenant only while ``check(tenant_id)`` returns
    None (else: why not, and what to do about it): a tool that acts on what the tenant
    holds (its skills, its primitives) and has nothing to act on yet.

    Put it beside ``requires``, above the handler's other decorators. The check is asked
    whenever the tool might be offered to a tenant (every turn's surface, every search),
    so it must answer from a cache: the module that declares it keeps that cache, and
    forgets a tenant's answer when what it holds changes.
    """

    def mark(func: HandlerFunc) -> HandlerFunc:
        func.__requires_tenant__ = check  # type: ignore[attr-defined]
        return func

    return mark


@dataclass(frozen=True, slots=True)
class Handler:
    """A callable plus how the registry must run it.

    ``inline`` handlers are quick, CPU-bound functions run on the caller's
    thread (no timeout can interrupt them); other sync handlers run on a worker
    thread so the caller can stop waiting after ``timeout`` seconds. Coroutine
    functions run on the registry's event loop under the same timeout.

    ``on_loop`` is an async twin for handlers whose work is awaiting I/O (an MCP
    call): ``aexecute_tool`` awaits it on the caller's own event loop, within the
    tool's and tenant's slots (``registry.workers``) and the same timeout, instead
    of handing ``func`` to a worker thread. Sync callers still call ``func``.

    ``killable`` sync handlers run in a child process (registry.killable), killed
    past their timeout or on a cancel; ``path`` is the dotted path the child imports.
    """

    func: HandlerFunc
    is_async: bool
    inline: bool
    timeout: float | None  # None: the deployment's TOOL_TIMEOUT_SECONDS
    sequential: bool = False  # never runs alongside other calls of the same turn
    requires: Requirement | None = None  # see ``requires``
    requires_tenant: TenantRequirement | None = None  # see ``requires_tenant``
    on_loop: HandlerFunc | None = None  # an async twin for async callers (see above)
    killable: bool = False
    path: str = ""

    @classmethod
    def wrap(
        cls,
        func: HandlerFunc,
        *,
        inline: bool = False,
        timeout: float | None = None,
        sequential: bool = False,
        requires: Requirement | None = None,
        requires_tenant: TenantRequirement | None = None,
        on_loop: HandlerFunc | None = None,
        killable: bool = False,
        path: str = "",
    ) -> Handler:
        is_async = inspect.iscoroutinefunction(func)
        if on_loop is not None and not inspect.iscoroutinefunction(on_loop):
            raise TypeError("a handler's on_loop twin must be a coroutine function")
        if killable and (is_async or inline or not path):
            raise ValueError("a killable handler is a synchronous, non-inline one named by its dotted path")
        return cls(
            func=func,
            is_async=is_async,
            inline=inline and not is_async,
            timeout=timeout,
            sequential=sequential,
            requires=requires,
            requires_tenant=requires_tenant,
            on_loop=on_loop,
            killable=killable,
            path=path,
        )


class HandlerImportError(ImportError):
    """A handler_path that does not resolve to a callable."""


def import_handler(path: str) -> HandlerFunc:
    """Resolve ``package.module.function``. Raises HandlerImportError saying why not."""
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise HandlerImportError(f"{path!r} is not a dotted path to a function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise HandlerImportError(f"cannot import {module_name}: {exc}") from exc
    func = getattr(module, attr, None)
    if not callable(func):
        raise HandlerImportError(f"{module_name} has no callable {attr!r}")
    return func


def import_system_handlers() -> list[str]:
    """Import the modules behind this deployment's system tools now; returns those that failed.

    The registry resolves handlers lazily, on the first turn that needs its
    catalog. A server calls this while it starts instead: importing them all
    (DuckDB, the retrieval index, the document tools) took about half a second
    under the GIL, which the first turns after a start spent while other
    answers were streaming. A module that fails is only logged here; the
    registry reports the tool as unavailable when it loads it.
    """
    from registry.system import system_catalog

    failed = []
    for module_name in sorted({entry["handler_path"].rpartition(".")[0] for entry in system_catalog().entries()}):
        try:
            importlib.import_module(module_name)
        except ImportError as exc:
            logger.warning("system tool module %s failed to import: %s", module_name, exc)
            failed.append(module_name)
    return failed
