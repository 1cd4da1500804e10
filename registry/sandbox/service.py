"""The sandbox as the registry uses it: settings, the shared zygote, one run → one envelope.

``custom_handler(definition)`` is what ``ToolRegistry._route`` dispatches to for
a custom tool. Every run records a SandboxRun row with the layers that were
active. Nothing here returns a traceback or the host's state to the caller.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings

from registry.context import ToolContext
from registry.contract import Err
from registry.handlers import HandlerFunc
from registry.sandbox import bridge, oslayer
from registry.sandbox import datasets as run_datasets
from registry.sandbox.client import Limits, RunOutcome, SandboxUnavailable, Zygote

logger = logging.getLogger("eunice.sandbox")

REQUIRED_OS_LAYERS = ("landlock", "seccomp", "network_namespace", "uid_drop", "pid_namespace", "mount_namespace")
# Off only in tests that play an attacker who got past the language layer.
LANGUAGE_LAYER = True
_zygote: Zygote | None = None
_zygote_lock = threading.Lock()


def limits() -> Limits:
    config = settings.SANDBOX
    return Limits(
        cpu_seconds=int(config["CPU_SECONDS"]),
        wall_seconds=float(config["WALL_SECONDS"]),
        memory_bytes=int(config["MEMORY_MB"]) << 20,
        result_bytes=int(config["RESULT_BYTES"]),
        max_tool_calls=int(config["MAX_TOOL_CALLS"]),
    )


def missing_os_layers() -> list[str]:
    """The OS-layer pieces this host cannot provide (probed without starting anything)."""
    import os

    available = {
        "landlock": oslayer.landlock_abi() >= 1,
        "seccomp": oslayer.seccomp_available(),
        "network_namespace": os.geteuid() == 0,
        "uid_drop": os.geteuid() == 0,
        "pid_namespace": os.geteuid() == 0,
        "mount_namespace": os.geteuid() == 0,
    }
    return [name for name in REQUIRED_OS_LAYERS if not available[name]]


def zygote() -> Zygote:
    """The process-wide zygote, (re)started on first use. Raises SandboxUnavailable."""
    global _zygote
    with _zygote_lock:
        if _zygote is None or not _zygote.alive:
            if _zygote is not None:
                _zygote.close()  # a dead zygote's control socket and process entry
            _zygote = Zygote(settings.SANDBOX["SCRATCH_DIR"])
        return _zygote


def preload() -> None:
    """Start the zygote now, at the server's start, so the first custom-tool call
    does not pay for it (about 0.4 s on an idle machine, seconds on a loaded one).
    A zygote that cannot start is logged; calls then try again and say why."""
    if _refusal() is not None:
        return
    try:
        zygote()
    except SandboxUnavailable as exc:
        logger.error("sandbox zygote did not start at server start: %s", exc)


def shutdown() -> None:
    global _zygote
    with _zygote_lock:
        if _zygote is not None:
            _zygote.close()
            _zygote = None


def run_code(
    code: str,
    inputs: dict,
    context: ToolContext,
    *,
    tool_name: str = "",
    definition_hash: str = "",
    dependencies: frozenset[str] = frozenset(),
) -> RunOutcome:
    """Run tool code for ``context``'s caller; its ``call_tool`` may reach only
    ``dependencies`` (and only tools sandboxed code may ever call, see bridge).

    Refuses (ok=False, stopped_by="policy") when the OS layer is incomplete and
    weak mode is not allowed, nesting is too deep or the call tree's budget is spent.
    """
    return _run(code, inputs, context, tool_name=tool_name, definition_hash=definition_hash, allowed=dependencies)


def run_analysis(code: str, default: Any, frames: dict[str, Any], context: ToolContext) -> RunOutcome:
    """Run analysis code over ``frames`` (``df`` = ``default``); tables come back as data.

    Called from a sandboxed run, the code may call only what that run may (it has no
    declaration of its own); called by the model, any tool sandboxed code may call.
    Same refusals and record as ``run_code``.
    """
    caller = context.sandbox
    allowed = caller.allowed if isinstance(caller, bridge.Scope) else None
    return _run(
        code,
        {},
        context,
        tool_name="analyze_data",
        allowed=allowed,
        datasets={"default": default, "frames": frames},
        want_frames=True,
    )


def run_program(code: str, context: ToolContext) -> tuple[RunOutcome, bridge.InnerEffects]:
    """Run a program the model wrote: its ``call`` reaches any tool sandboxed code may call
    (or, called from a sandboxed run, what that run may), through the registry's gate.
    Returns the outcome and what its inner calls made for the user (cards, datasets, files).
    Same refusals and record as ``run_code``."""
    caller = context.sandbox
    allowed = caller.allowed if isinstance(caller, bridge.Scope) else None
    effects = bridge.InnerEffects()
    outcome = _run(code, {}, context, tool_name="run_program", allowed=allowed, datasets={}, effects=effects)
    return outcome, effects


def _run(
    code: str,
    inputs: dict,
    context: ToolContext,
    *,
    tool_name: str,
    allowed: frozenset[str] | None,
    definition_hash: str = "",
    datasets: dict[str, Any] | None = None,
    want_frames: bool = False,
    effects: bridge.InnerEffects | None = None,
) -> RunOutcome:
    configured = limits()
    scope, refusal = bridge.scope_for(context, configured, allowed, int(settings.SANDBOX["MAX_DEPTH"]))
    refusal = refusal or _refusal()
    if refusal is not None:
        outcome = RunOutcome(ok=False, stopped_by="policy", error=refusal)
        _record(outcome, tool_name, context, definition_hash)
        return outcome
    assert scope is not None
    try:
        sandbox = zygote()  # first, so that starting it is not charged to the run's time
        outcome = sandbox.run(
            code,
            inputs,
            _datasets(context, code) if datasets is None else datasets,
            scope.limits(configured),
            bridge.call_tool_for(context, scope),
            language=LANGUAGE_LAYER,
            want_frames=want_frames,
            cancelled=_cancel_check(context),
            on_exit=scope.allowance.spend_cpu,
            call_for_data=bridge.call_for_data_for(context, scope, effects),
        )
    except SandboxUnavailable as exc:
        logger.error("sandbox unavailable: %s", exc)
        outcome = RunOutcome(ok=False, stopped_by="unavailable", error="the sandbox is unavailable")
    _record(outcome, tool_name, context, definition_hash)
    return outcome


def _cancel_check(context: ToolContext):
    """A check of the caller's cancel token: a cancelled turn kills its run."""
    token = context.cancel
    return (lambda: token.cancelled) if token is not None else None


def _refusal() -> str | None:
    missing = missing_os_layers()
    if missing and not settings.SANDBOX["ALLOW_WEAK"]:
        return (
            "custom tools are refused on this host: the sandbox's OS layer lacks "
            f"{', '.join(missing)} (set EUNICE_SANDBOX_ALLOW_WEAK=1 to accept the weaker mode)"
        )
    return None


def _datasets(context: ToolContext, code: str) -> dict[str, Any]:
    """``df`` and ``datasets`` for the run: the conversation's, if the caller may read them."""
    return run_datasets.for_run(code, context, int(settings.SANDBOX["DATASET_MB"]) << 20)


def _record(outcome: RunOutcome, tool_name: str, context: ToolContext, definition_hash: str) -> None:
    from django.db import DatabaseError

    from registry.models import SandboxRun

    try:
        SandboxRun.objects.create(
            tool_name=tool_name[:64],
            tenant_id=str(context.tenant_id)[:64],
            definition_hash=definition_hash,
            ok=outcome.ok,
            stopped_by=outcome.stopped_by,
            layers=outcome.layers,
            error=outcome.error[:2000],
            tool_calls=outcome.tool_calls,
            wall_ms=outcome.wall_ms,
        )
    except DatabaseError:  # the record must never fail the run it describes
        logger.exception("recording the sandbox run of %s failed", tool_name)


def outcome_to_return(outcome: RunOutcome) -> Any:
    """What the handler returns: text, a full-response dict, or an Err naming the layer."""
    if not outcome.ok:
        layer = outcome.stopped_by or "tool"
        return Err(f"{outcome.error} [stopped by: {layer}]", f"sandbox:{layer}")
    answer = outcome.answer or {}
    if answer.get("kind") == "response":
        return answer["response"]
    return answer.get("text", "")


def custom_handler(
    name: str, code: str, definition_hash: str, dependencies: frozenset[str] = frozenset()
) -> HandlerFunc:
    def handle(inputs: dict, context: ToolContext) -> Any:
        return outcome_to_return(
            run_code(code, inputs, context, tool_name=name, definition_hash=definition_hash, dependencies=dependencies)
        )

    return handle
