"""The tool registry: the one path from a tool name to a ToolResult.

``execute_tool`` (and its awaitable twin ``aexecute_tool``) is the only code
that calls a handler. Every call goes lookup → input validation → execution →
contract envelope (Ok | Hint | Err) → ToolResult → telemetry and execution
log, whatever the tool's type. Handlers are wrapped by the Uniform Tool
Contract once, when they are registered; direct callers of a handler keep
getting whatever it returns.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import close_old_connections

from eunice.jsonlimits import JSONTooDeep, check_depth
from eunice.telemetry import state as telemetry
from registry import aio, availability, gate, toolplan, usage
from registry.context import ToolContext
from registry.contract import (
    Envelope,
    Err,
    Hint,
    classify,
    envelope_to_tool_result,
    wrap_for_dispatch,
)
from registry.execlog import encode_inputs, summarize, writer
from registry.handlers import Handler, HandlerFunc, HandlerImportError, TenantRequirement, import_handler
from registry.hot_settings import hot
from registry.killable import KillableProcesses, Killed
from registry.lazy import Lazy
from registry.models import ToolType
from registry.result import ToolResult
from registry.snapshot import Definition, Snapshot, redacted
from registry.suggest import closest_tools
from registry.toolplan import ToolPlan
from registry.validation import InputError
from registry.workers import ToolWorkers

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from registry.search import ToolSearch

logger = logging.getLogger("eunice.registry")

KILL_SECONDS = 5.0  # a killable call past its timeout: its child killed and its worker back within this


# init=False: made by ``_call``, on every call's path; a class whose ``__init__`` is Python
# code costs a second run of the interpreter's loop to build (from C), several times what
# setting the fields costs.
@dataclass(slots=True, init=False)
class Call:
    """One prepared call: everything the run step needs."""

    name: str
    inputs: dict
    context: ToolContext
    definition: Definition | None
    handler: Handler | None
    started: float
    early: Envelope | None  # set when the call ends before the handler runs
    span: Span | None  # its execute_tool span, while telemetry is on (registry.tracing)


# Looked up once: CPython 3.11 looks a method of an instance that has its own ``__dict__``
# (a ToolContext: registry.context) up the slow, unspecialised way on every call.
_for_call = ToolContext.for_call


def _call(name: str, inputs: dict, context: ToolContext, started: float) -> Call:
    """A call to prepare: no definition, handler, early end or span yet."""
    call = Call()
    call.name = name
    call.inputs = inputs
    call.context = context
    call.started = started
    call.definition = call.handler = call.early = call.span = None
    return call


class ToolRegistry:
    def __init__(self) -> None:
        self._snapshot = Snapshot()
        self._handlers: dict[str, Handler] = {}
        self._unavailable: dict[str, str] = {}  # tool name -> why it cannot run
        self._system_loaded_for = -1
        self._lock = threading.RLock()
        self._workers: ToolWorkers | None = None
        self._killable: KillableProcesses | None = None
        self._search: ToolSearch | None = None
        self._custom: dict[tuple[str, str], Handler] = {}  # (tool, approved hash) -> handler
        self._plans: dict[str, ToolPlan] = {}  # tool -> its plan (registry.toolplan), made at its first call
        self._plans_of: dict[str, Definition] | None = None  # the definitions those plans were made from
        # Bumped whenever a handler comes or goes: what is offered may have changed.
        self.availability_generation = 0

    # --- registration -----------------------------------------------------

    def register_handler(
        self,
        name: str,
        func: HandlerFunc,
        *,
        inline: bool = False,
        timeout: float | None = None,
        sequential: bool = False,
        on_loop: HandlerFunc | None = None,
        killable: bool = False,
    ) -> None:
        """Make ``func`` the handler of tool ``name`` (system and MCP tools); ``on_loop`` is
        its async twin for async callers (``Handler``). ``killable``: run it in a child
        process, killed past its timeout (registry.killable; ``func`` must be importable)."""
        dispatch = wrap_for_dispatch(name, func)
        handler = Handler.wrap(
            dispatch,
            inline=inline,
            timeout=timeout,
            sequential=sequential,
            requires=_requirement(func),
            requires_tenant=_tenant_requirement(func),
            on_loop=wrap_for_dispatch(name, on_loop) if on_loop is not None else None,
            killable=killable,
            path=f"{func.__module__}.{func.__qualname__}" if killable else "",
        )
        with self._lock:
            self._handlers[name] = handler
            self._unavailable.pop(name, None)
            self.availability_generation += 1

    def unregister_handler(self, name: str, reason: str | None = None) -> None:
        with self._lock:
            self._handlers.pop(name, None)
            if reason:
                self._unavailable[name] = reason
            self.availability_generation += 1

    def handler(self, name: str) -> Handler | None:
        return self._handlers.get(name)

    def known_reason(self, name: str) -> str | None:
        """Why ``name`` has no handler, when the registry was told or found out (else None)."""
        return self._unavailable.get(name)

    def why_unavailable(self, definition: Definition, tenant_id: str | None = None) -> str | None:
        """Why the tool cannot run now, or None (registry.availability, for every kind of tool);
        with ``tenant_id``, also for that tenant (what it holds: ``requires_tenant``)."""
        if self._system_loaded_for != self._snapshot.generation:
            self.definitions()  # the system handlers are registered with the definitions
        return availability.why_unavailable(self, definition, tenant_id)

    def offered_to(self, definition: Definition, tenant_id: str) -> bool:
        """Whether the tool may be offered to the tenant's model: visible to it, and able to
        run, for this deployment and for what this tenant holds."""
        return definition.visible_to(tenant_id) and self.why_unavailable(definition, tenant_id) is None

    def tenant_requirement(self, name: str) -> TenantRequirement | None:
        """The check of what a tenant must hold for tool ``name`` to run (``requires_tenant``), if any."""
        handler = self._handlers.get(name)
        return handler.requires_tenant if handler is not None else None

    @property
    def snapshot_generation(self) -> int:
        """Bumped whenever the cached definitions are reloaded."""
        return self._snapshot.generation

    def tool_search(self) -> ToolSearch:
        """The search index over this registry's tools (built on first use)."""
        if self._search is None:
            from registry.search import ToolSearch

            with self._lock:
                if self._search is None:
                    self._search = ToolSearch(self)
        return self._search

    def has_handler(self, name: str) -> bool:
        return name in self._handlers

    def invalidate(self) -> None:
        """Forget the cached definitions; the next call reloads them."""
        self._snapshot.invalidate()

    def loaded_definitions(self) -> dict[str, Definition]:
        """The definitions as last loaded, without a query (so callable on an event loop):
        at most a poll period old, or empty before the first ``definitions()``."""
        return self._snapshot.by_name

    def definitions(self) -> dict[str, Definition]:
        defs = self._snapshot.current()
        if self._system_loaded_for != self._snapshot.generation:
            self._load_system_handlers(defs)
        return defs

    def _load_system_handlers(self, defs: dict[str, Definition]) -> None:
        from registry.system import system_catalog

        catalog = system_catalog()
        with self._lock:
            enabled = {entry["name"]: entry for entry in catalog.entries()}
            for listed in catalog.all_entries():
                if listed["name"] not in enabled:
                    flag = catalog.flag_of(listed["name"]) or "?"
                    self._unavailable[listed["name"]] = f"turned off by the feature flag {flag}"
            for name, definition in defs.items():
                if definition.tool_type != ToolType.SYSTEM or name in self._handlers:
                    continue
                entry = enabled.get(name)
                if entry is None:
                    continue
                self._register_system(name, definition.handler_path or entry["handler_path"], entry)
            self._system_loaded_for = self._snapshot.generation
            self.availability_generation += 1

    def _register_system(self, name: str, path: str, entry: dict) -> None:
        try:
            func = import_handler(path)
        except HandlerImportError as exc:
            logger.warning("tool %s: handler %s failed to import: %s", name, path, exc)
            self._unavailable[name] = "its handler could not be loaded"
            return
        self._handlers[name] = Handler.wrap(
            wrap_for_dispatch(name, func),
            inline=entry.get("inline", False),
            timeout=entry.get("timeout_seconds"),
            sequential=entry.get("sequential", False),
            requires=_requirement(func),
            requires_tenant=_tenant_requirement(func),
            killable=entry.get("killable", False),
            path=path if entry.get("killable", False) else "",
        )

    # --- the catalog the model sees ---------------------------------------

    def get_tools_for_llm(self, tenant_id: str) -> list[dict]:
        """Every tool the tenant's model may be offered, with ``reasoning`` injected."""
        return [
            {"name": d.name, "description": d.description, "input_schema": d.llm_schema}
            for d in self.definitions().values()
            if self.offered_to(d, tenant_id)
        ]

    def callable_names(self, tenant_id: str) -> list[str]:
        return [d.name for d in self.definitions().values() if d.callable_by(tenant_id)]

    # --- dispatch ----------------------------------------------------------

    def execute_tool(self, name: str, inputs: dict | None, context: ToolContext) -> ToolResult:
        """Run tool ``name`` for ``context.tenant_id``; never raises for tool failures.

        Raises RuntimeError when called on a thread that is running an event
        loop: this call blocks, so async code must ``await aexecute_tool``.
        """
        # Not through execute_for_data: a call less on every call's path.
        if asyncio._get_running_loop() is not None:
            raise _blocks_the_loop()
        call = self._prepared(name, inputs, context, time.perf_counter(), None, None, None)
        return self._finish(call, self._run_sync(call))

    def execute_for_data(self, name: str, inputs: dict | None, context: ToolContext) -> tuple[ToolResult, Envelope]:
        """``execute_tool``, also handing back the envelope the result was rendered from
        (a program's inner ``call`` reads the tool's data from it). Same raises."""
        if asyncio._get_running_loop() is not None:
            raise _blocks_the_loop()
        call = self._prepared(name, inputs, context, time.perf_counter(), None, None, None)
        envelope = self._run_sync(call)
        return self._finish(call, envelope), envelope

    async def aexecute_tool(self, name: str, inputs: dict | None, context: ToolContext) -> ToolResult:
        """``execute_tool`` for async callers: nothing blocks the caller's event loop.

        A call is prepared right here when that needs no query (``_prepare_here``), else
        on a database thread. A tool whose handler has an ``on_loop`` twin (an MCP tool)
        then runs on the caller's loop from end to end when the execution log is
        buffered: no database thread, no worker thread, only the hop to the session's
        loop when that is another one (``MCPManager.acall_tool``). A synchronous handler
        runs on a tool worker, which also finishes the call: one trip off the loop.
        """
        here = self._prepare_here(name, inputs, context)
        call = here if here is not None else await aio.in_db_thread(self._prepare)(name, inputs, context)
        if call.early is not None:
            envelope = call.early
        elif call.handler is not None and call.handler.on_loop is not None:
            envelope = await self._run_on_loop(call)
            if here is not None and (not hot.execution_log_enabled or writer().flush_seconds > 0):
                result = self._finish(call, envelope, charge=False)  # the log row is only queued
                if result.cost:  # (an MCP result carries none) the usage log is written off the loop
                    await aio.in_db_thread(usage.charge)(call.context, call.name, result)
                return result
        elif call.handler is not None and call.handler.is_async:
            envelope = await self._run_async(call)
        else:
            return await self._run_on_worker(call)
        return await aio.in_db_thread(self._finish)(call, envelope)

    def is_sequential(self, name: str) -> bool:
        """Whether ``name`` must not run alongside other calls of the same turn."""
        handler = self._handlers.get(name)
        return handler is not None and handler.sequential

    def refuse(self, name: str, inputs: dict | None, context: ToolContext, envelope: Envelope) -> ToolResult:
        """Answer a call the caller stopped before it ran (the user's cancel).

        The refusal is rendered, recorded and logged exactly like a call that ran.
        """
        inputs = dict(inputs or {})
        reasoning = inputs.pop("reasoning", None)
        call = _call(name, inputs, context.for_call(self, name, reasoning), time.perf_counter())
        if telemetry.on:
            from registry import tracing

            call.span = tracing.start(call)
        return self._finish(call, envelope)

    def _prepare(self, name: str, inputs: dict | None, context: ToolContext) -> Call:
        return self._prepared(name, inputs, context, time.perf_counter(), None, None, None)

    def _prepare_here(self, name: str, inputs: dict | None, context: ToolContext) -> Call | None:
        """``_prepare`` on the caller's event loop, when nothing in it needs a query; None
        when something might: the definitions or the ruled tools are due a re-check, the
        caller's gate has not planned the call, the tool has no handler in this process
        yet (a custom tool, or an MCP server to connect from its row), its handler
        declares a requirement (asked on each call; what a tenant holds may take a
        query), or the tenant may not call it (the answer suggests tools from the search
        index). Those take ``_prepare`` on a DB thread."""
        started = time.perf_counter()
        snapshot = self._snapshot
        if not snapshot.fresh() or self._system_loaded_for != snapshot.generation:
            return None
        handler = self._handlers.get(name)
        if handler is None or handler.requires is not None or handler.requires_tenant is not None:
            return None
        definition = snapshot.by_name.get(name)
        if definition is None or not definition.callable_by(context.tenant_id):
            return None
        concerned = gate.concerns_without_a_query(name, context)
        if concerned is None:
            return None
        return self._prepared(name, inputs, context, started, snapshot.by_name, concerned, handler)

    def _prepared(
        self,
        name: str,
        inputs: dict | None,
        context: ToolContext,
        started: float,
        definitions: dict[str, Definition] | None,
        concerned: bool | None,
        handler: Handler | None,
    ) -> Call:
        if not isinstance(context, ToolContext):
            raise TypeError(f"execute_tool needs a ToolContext, not {type(context).__name__}")
        tenant_id = context.tenant_id
        if not tenant_id:
            raise ValueError("execute_tool needs a context with a tenant_id")
        inputs = dict(inputs or {})
        reasoning = inputs.pop("reasoning", None)
        call = _call(name, inputs, _for_call(context, self, name, reasoning), started)
        if telemetry.on:
            from registry import tracing

            call.span = tracing.start(call)
        may_query = definitions is None  # (given: prepared on an event loop, where no query may run)
        if definitions is None:
            definitions = self.definitions()
        if concerned is None:
            concerned = gate.concerns(name, call.context)
        if concerned:
            refusal = gate.check(self, name, inputs, call.context)
            if refusal is not None:
                call.definition, call.early = definitions.get(name), refusal
                return call
        definition = definitions.get(name)
        if definition is None or not definition.callable_by(tenant_id):
            if may_query and self._snapshot.recheck():
                definition = self.definitions().get(name)
            if definition is None or not definition.callable_by(tenant_id):
                call.early = self._unknown_tool(name, tenant_id)
                return call
        call.definition = definition
        plan = self._plans.get(name)
        registered = self._handlers.get(name)
        if plan is None or plan.definition is not definition or plan.registered is not registered:
            plan = self._plan(name, definition, registered)
        if not plan.available:
            why_not = availability.why_unavailable(self, definition, tenant_id)
            if why_not is not None:
                call.early = Hint(
                    "schema",
                    f"{name} is unavailable here: {why_not}; it cannot be used now, "
                    "so use another tool (search_tools finds one)",
                )
                return call
        accepts = plan.accepts
        if accepts is None or not accepts(inputs):
            try:
                # Before the validator, which (like every consumer of the inputs after it) recurses.
                check_depth(inputs, what="the input")
                plan.check(inputs)
            except plan.invalid as exc:
                call.early = _input_hint(definition, plan.explain(exc))
                return call
            except JSONTooDeep as exc:
                call.early = Hint("schema", f"invalid input for {name}: {exc}; pass a flatter object")
                return call
        if handler is None:
            handler = plan.handler
        call.handler, why_not = (handler, "") if handler is not None else self._route(definition)
        if call.handler is None:
            call.early = Err(f"tool {name!r} is unavailable: {why_not}", "ToolUnavailable")
        return call

    def _plan(self, name: str, definition: Definition, registered: Handler | None) -> ToolPlan:
        """A new plan for ``name`` (registry.toolplan), kept for its next calls. The plans
        of an older set of definitions are dropped with it."""
        made = toolplan.plan(definition, registered)
        with self._lock:
            if self._plans_of is not self._snapshot.by_name:
                self._plans, self._plans_of = {}, self._snapshot.by_name
            self._plans[name] = made
        return made

    def _route(self, definition: Definition) -> tuple[Handler | None, str]:
        if definition.tool_type == ToolType.CUSTOM:
            return self._route_custom(definition)
        handler = self._handlers.get(definition.name)
        if handler is not None:
            return handler, ""
        if definition.tool_type == ToolType.MCP:
            return self._connect_mcp(definition)
        return None, self._unavailable.get(definition.name, "it has no registered handler")

    def _route_custom(self, definition: Definition) -> tuple[Handler | None, str]:
        # registry.availability has checked the feature flag and the approved hash.
        current = definition.current_hash
        key = (definition.name, current)
        handler = self._custom.get(key)
        if handler is None:
            from registry.sandbox.bridge import declared_dependencies
            from registry.sandbox.service import custom_handler

            # Inline: the sandbox enforces its own CPU and wall-clock limits by killing the run,
            # and call_tool re-enters the registry on the caller's thread and transaction.
            func = custom_handler(
                definition.name, definition.implementation, current, declared_dependencies(definition)
            )
            handler = Handler.wrap(wrap_for_dispatch(definition.name, func), inline=True)
            with self._lock:
                # One entry per tool: an edited (re-approved) version replaces the old one.
                self._custom = {k: v for k, v in self._custom.items() if k[0] != definition.name}
                self._custom[key] = handler
        return handler, ""

    def _connect_mcp(self, definition: Definition) -> tuple[Handler | None, str]:
        """An MCP tool with no handler in this process: connect its server from the DB."""
        from registry.mcp.manager import get_manager
        from registry.mcp.naming import mcp_target

        target = mcp_target(definition.implementation)
        conn = target[0] if target is not None else ""
        why_not = get_manager().ensure_connected(conn) if conn else "its MCP server is not connected"
        handler = self._handlers.get(definition.name)
        if handler is not None:
            return handler, ""
        return None, why_not or self._unavailable.get(definition.name, "its MCP server does not offer it")

    def _unknown_tool(self, name: str, tenant_id: str) -> Hint:
        alternatives = closest_tools(self, name, tenant_id, limit=3)
        where = "did you mean one of these?" if alternatives else "use search_tools to find one"
        return Hint("schema", f"unknown tool {name!r}; {where}", alternatives)

    def _timeout(self, handler: Handler) -> float:
        return handler.timeout or settings.TOOL_TIMEOUT_SECONDS

    def _run_sync(self, call: Call, *, in_span: bool = False) -> Envelope:
        """The prepared call's envelope on this thread: its early end, or its handler's
        answer (run within the call's span while telemetry is on)."""
        if call.early is not None:
            return call.early
        if call.span is not None and not in_span:
            from registry import tracing

            with tracing.current(call.span):
                return self._run_sync(call, in_span=True)
        handler = call.handler
        assert handler is not None
        try:
            if handler.inline:
                func = handler.func  # (read, then called: a call of ``handler.func`` looks it up unspecialised)
                envelope = func(call.inputs, call.context)
                if isinstance(envelope, CoroutineType):  # a sync callable that returned a coroutine
                    envelope = aio.run_sync(envelope, self._timeout(handler))
                return envelope
            timeout = self._timeout(handler)
            if handler.is_async:
                return aio.run_sync(handler.func(call.inputs, call.context), timeout)
            future, stop = self._submit(call, timeout)
            try:
                return future.result(timeout)
            except concurrent.futures.TimeoutError:
                if stop is not None and self._stop_child(future, stop):
                    return _killed(timeout)
                busy = self.workers().abandon(future)
                if busy is not None:
                    return _no_slot(busy, timeout)
                raise TimeoutError(f"timed out after {timeout:g} s") from None
        except TimeoutError as exc:
            return Err(str(exc), "TimeoutError")

    async def _run_on_worker(self, call: Call) -> ToolResult:
        """A synchronous handler (inline ones too: nothing blocks the event loop) on a tool
        worker, which finishes the call too, straight after the handler (``_Finisher``).
        A call the caller stops waiting for first (its timeout, the user's cancel) is
        finished by the caller with the timeout's answer, or not at all when cancelled:
        never twice, and never the worker's late answer."""
        handler = call.handler
        assert handler is not None
        timeout = self._timeout(handler)
        finisher = _Finisher(self, call)
        future, stop = self._submit(call, timeout, finisher)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            if not finisher.claim():  # the worker is finishing the call this very moment
                return await asyncio.wrap_future(future)
            if stop is not None and await asyncio.to_thread(self._stop_child, future, stop):
                envelope = _killed(timeout)
            else:
                busy = self.workers().abandon(future)
                envelope = (
                    _no_slot(busy, timeout)
                    if busy is not None
                    else Err(f"timed out after {timeout:g} s", "TimeoutError")
                )
        except asyncio.CancelledError:  # the caller stopped waiting (the user's cancel)
            finisher.claim()  # (a call the worker finished already stays logged as it ran)
            if stop is not None:
                stop.set()  # a killable call's child is killed within POLL_SECONDS
            self.workers().abandon(future)
            raise
        return await aio.in_db_thread(self._finish)(call, envelope)

    async def _run_on_loop(self, call: Call) -> Envelope:
        """A handler's ``on_loop`` twin awaited right here, once the tool and the tenant each
        have a slot (``ToolWorkers.reserve``: the threaded calls' slots and line), within
        the handler's timeout. A cancel of the caller's task stops it and frees the slots."""
        handler = call.handler
        assert handler is not None and handler.on_loop is not None
        timeout = self._timeout(handler)
        workers = self.workers()
        tool, tenant = call.name, call.context.tenant_id
        slot = workers.reserve(tool, tenant)
        try:
            async with asyncio.timeout(timeout):
                if not slot.done():
                    await _settled(slot)
                if call.span is None:
                    return await handler.on_loop(call.inputs, call.context)
                from registry import tracing

                with tracing.current(call.span):  # an MCP server gets it as its traceparent
                    return await handler.on_loop(call.inputs, call.context)
        except TimeoutError:
            busy = None if slot.done() else workers.abandon(slot)
            return (
                _no_slot(busy, timeout) if busy is not None else Err(f"timed out after {timeout:g} s", "TimeoutError")
            )
        finally:
            if not slot.done():
                workers.abandon(slot)
            if slot.done() and not slot.cancelled():
                workers.release(tool, tenant)

    async def _run_async(self, call: Call) -> Envelope:
        handler = call.handler
        assert handler is not None
        timeout = self._timeout(handler)
        try:
            if call.span is None:
                return await asyncio.wait_for(handler.func(call.inputs, call.context), timeout)
            from registry import tracing

            with tracing.current(call.span):  # the task wait_for makes copies the context
                return await asyncio.wait_for(handler.func(call.inputs, call.context), timeout)
        except TimeoutError:
            return Err(f"timed out after {timeout:g} s", "TimeoutError")

    def _submit(
        self, call: Call, timeout: float, finisher: _Finisher | None = None
    ) -> tuple[concurrent.futures.Future, threading.Event | None]:
        """The call on a tool worker; for a killable handler, also the flag that kills its
        child. With a ``finisher``, the worker also finishes the call: the future's result
        is then the ToolResult (None if the caller took the finish over), not the envelope."""
        handler = call.handler
        assert handler is not None
        tool, tenant = call.name, call.context.tenant_id
        if not handler.killable:
            run = _on_worker
            if call.span is not None:
                from registry import tracing

                run = tracing.on_worker(call.span, _on_worker)
            future = self.workers().submit(
                tool, tenant, run, handler.func, call.inputs, call.context, timeout, finisher
            )
            return future, None
        stop = threading.Event()
        future = self.workers().submit(
            tool,
            tenant,
            _in_child,
            finisher,
            self.killable_processes(),
            handler.path,
            call.name,
            call.inputs,
            call.context,
            timeout,
            stop,
        )
        return future, stop

    def _stop_child(self, future: concurrent.futures.Future, stop: threading.Event) -> bool:
        """A killable call past its timeout: True once its child is killed and its worker
        free again (within KILL_SECONDS); False when it never started (no slot came free)."""
        if not self.workers().started(future):
            return False
        stop.set()
        try:
            future.exception(KILL_SECONDS)
        except concurrent.futures.TimeoutError:
            return False  # not back in time: written off like any hung thread
        return True

    def killable_processes(self) -> KillableProcesses:
        """The child processes killable handlers run in (registry.killable), made on first use."""
        if self._killable is None:
            with self._lock:
                if self._killable is None:
                    self._killable = KillableProcesses(idle=settings.EUNICE_KILLABLE_PROCESSES)
        return self._killable

    def workers(self) -> ToolWorkers:
        """The threads synchronous handlers run on (registry.workers), made on first use."""
        if self._workers is None:
            with self._lock:
                if self._workers is None:
                    self._workers = ToolWorkers(
                        threads=settings.EUNICE_TOOL_THREADS,
                        per_tool=settings.EUNICE_TOOL_CALLS_PER_TOOL,
                        per_tenant=settings.EUNICE_TOOL_CALLS_PER_TENANT,
                    )
        return self._workers

    def _finish(self, call: Call, envelope: Envelope, *, charge: bool = True) -> ToolResult:
        result = envelope_to_tool_result(envelope)
        if charge and result.cost:  # (most results cost nothing: no call for them)
            usage.charge(call.context, call.name, result)
        recorder, logged, span = call.context.recorder, hot.execution_log_enabled, call.span
        if recorder is None and not logged and span is None:
            return result  # nothing records how the call ended
        outcome, kind = classify(envelope)
        if recorder is not None:
            _record_envelope(recorder, call, outcome, kind)
        if logged:
            self._log(call, result, outcome, kind)
        if span is not None:
            _trace(call, result, outcome, kind)
        return result

    def _log(self, call: Call, result: ToolResult, outcome: str, kind: str | None) -> None:
        elapsed_ms = (time.perf_counter() - call.started) * 1000.0
        ctx = call.context
        # A row is a tuple in the log's column order (registry.execlog.LogRow): cheaper to
        # build, keep in the buffer and write than a dict of the column names.
        writer().record(
            (
                call.name[:64],  # tool_name
                str(ctx.tenant_id),
                str(ctx.user_id or ""),
                str(ctx.conversation_id or ""),
                encode_inputs(redacted(call.inputs, call.definition)),  # input_data
                summarize(result.content),  # output_summary
                # success: a Hint is a correction the model can act on, not a failure.
                outcome != "err",
                # Plain text, not the enum members: a row of plain values is one the
                # collector stops tracking (registry.execlog.LogRow).
                str(outcome),
                str(kind or ""),  # outcome_kind
                result.error or "",
                elapsed_ms,
                datetime.now(UTC),  # created_at; timezone.now(): USE_TZ is on (eunice/settings.py)
            )
        )


def _input_hint(definition: Definition, exc: InputError) -> Hint:
    expected = f"; expected {json.dumps(exc.expected, separators=(',', ':'))}" if exc.expected else ""
    return Hint(
        "schema",
        f"invalid input for {definition.name}: {exc}{expected}",
        [{"label": definition.name, "score": 1.0, "input_schema": definition.input_schema}],
    )


def _requirement(func: HandlerFunc) -> Any:
    return getattr(func, "__requires__", None)


def _tenant_requirement(func: HandlerFunc) -> Any:
    return getattr(func, "__requires_tenant__", None)


def _record_envelope(recorder: Any, call: Call, outcome: str, kind: str | None) -> None:
    try:
        record: dict[str, Any] = {"tool": call.name, "envelope": outcome, "kind": kind}
        if call.context.sandbox is not None:  # staff see that sandboxed code made the call
            record["from_sandbox"] = True
        recorder.record("contract_envelope", record)
    except Exception:  # telemetry must never fail the call it describes
        logger.exception("recording contract_envelope for %s failed", call.name)


def _trace(call: Call, result: ToolResult, outcome: str, kind: str | None) -> None:
    from registry import tracing

    try:
        tracing.finish(call, result, outcome, kind)
    except Exception:  # telemetry must never fail the call it describes
        logger.exception("ending the execute_tool span of %s failed", call.name)


def _on_worker(
    func: HandlerFunc, inputs: dict, context: ToolContext, timeout: float, finisher: _Finisher | None = None
) -> Any:
    """A handler's call on a worker thread, its connection tidied as for a request; with a
    ``finisher``, the call finished there too (``_Finisher.finish``)."""
    close_old_connections()
    try:
        envelope = func(inputs, context)
        if inspect.iscoroutine(envelope):  # a sync callable that returned a coroutine
            envelope = aio.run_sync(envelope, timeout)
        return envelope if finisher is None else finisher.finish(envelope)
    finally:
        close_old_connections()


class _Finisher:
    """Who finishes a call that runs on a tool worker (``ToolRegistry._run_on_worker``):
    the worker, straight after the handler returns, saving the caller a second trip off
    its event loop; or the caller, once it has stopped waiting (the call's timeout, the
    user's cancel). Whichever claims it first does; the other leaves it alone, so a call
    is rendered, logged and charged once, and a late answer never overwrites the
    timeout the caller already gave."""

    __slots__ = ("_registry", "_call", "_once")

    def __init__(self, registry: ToolRegistry, call: Call) -> None:
        self._registry, self._call = registry, call
        self._once = threading.Lock()  # taken by the first claim, never given back

    def claim(self) -> bool:
        """True for the first to ask, False for everyone after."""
        return self._once.acquire(blocking=False)

    def finish(self, envelope: Envelope) -> ToolResult | None:
        """The call finished with ``envelope`` (on the worker); None if the caller claimed it."""
        if not self.claim():
            return None
        return _finish_reconnecting(self._registry, self._call, envelope)


# ``ToolRegistry._finish`` run again on a new connection if its first statement found
# the old one gone, as a database thread's step is (``aio.in_db_thread``); wrapped once.
_finish_reconnecting = aio.reconnecting(ToolRegistry._finish)

get_registry: Lazy[ToolRegistry] = Lazy(ToolRegistry)  # the process-wide registry


def execute_tool(name: str, inputs: dict | None, context: ToolContext) -> ToolResult:
    return get_registry().execute_tool(name, inputs, context)


async def _settled(future: concurrent.futures.Future) -> None:
    """Wait for ``future`` on the running loop. Unlike ``asyncio.wrap_future``, a cancel of
    the waiter leaves ``future`` alone: ``ToolWorkers.abandon`` decides what becomes of it."""
    loop = asyncio.get_running_loop()
    woken = loop.create_future()

    def settle() -> None:
        if not woken.done():
            woken.set_result(None)

    def wake(_: concurrent.futures.Future) -> None:
        loop.call_soon_threadsafe(settle)

    future.add_done_callback(wake)
    await woken


def _in_child(
    finisher: _Finisher | None,
    processes: KillableProcesses,
    path: str,
    name: str,
    inputs: dict,
    context: ToolContext,
    timeout: float,
    stop: threading.Event,
) -> Any:
    """A killable handler's call, sent to a child process by a worker thread (registry.killable);
    with a ``finisher``, the call finished on that thread too (``_Finisher.finish``)."""
    try:
        envelope = processes.run(path, name, inputs, context, timeout, stop)
    except Killed as exc:
        envelope = (
            Err("cancelled; its process was killed", "Cancelled")
            if str(exc) == "cancelled"
            else Err(f"{name} failed: {exc}", "ToolCrashed")
        )
    if finisher is None:
        return envelope
    try:
        return finisher.finish(envelope)
    finally:
        close_old_connections()  # as after a request: the finish may have queried (a charge)


def _blocks_the_loop() -> RuntimeError:
    return RuntimeError(
        "execute_tool blocks and was called on an event-loop thread; "
        "use `await registry.aexecute_tool(...)` from async code"
    )


def _killed(timeout: float) -> Err:
    return Err(f"timed out after {timeout:g} s; its process was killed", "TimeoutError")


def _no_slot(busy: str, timeout: float) -> Err:
    """A call that waited its whole timeout for a slot (registry.workers) and never ran."""
    return Err(f"{busy}; no slot came free within {timeout:g} s, so this call did not run", "ToolBusy")
