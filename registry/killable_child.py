"""The child a killable tool runs in (registry.killable): ``python -m registry.killable_child``.

Reads calls from stdin and writes their answers to stdout, each a pickle behind a
4-byte length; says it is ready with one byte once Django is set up. Whatever a
handler prints goes to stderr, never into the answers. Exits when stdin closes.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import pickle
import sys
import threading
import time
from typing import Any, BinaryIO

HEADER_SIZE = 4
PARENT_CHECK_SECONDS = 1.0


def _exit_with_parent(parent: int) -> None:
    """The server gone (even SIGKILLed), this child goes too, hung handler and all. Not
    PR_SET_PDEATHSIG: that fires when the parent's *thread* that started us ends."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(0)


def _read(stream: BinaryIO, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _answer(out: BinaryIO, kind: str, value: Any) -> None:
    try:
        body = pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 (an unpicklable result or exception: said, not lost)
        what = "result" if kind == "ok" else f"error ({type(value).__name__}: {value})"
        body = pickle.dumps(("raised", RuntimeError(f"the tool's {what} could not be sent back: {exc}")))
    out.write(len(body).to_bytes(HEADER_SIZE, "big") + body)
    out.flush()


def main() -> None:
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # print() in a handler lands on stderr
    inp = sys.stdin.buffer

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eunice.settings")
    django.setup()
    from django.conf import settings
    from django.db import close_old_connections, connections

    databases = os.environ.get("EUNICE_KILLABLE_DATABASES")
    if databases:  # the parent's databases, not what this process's settings would say
        settings.DATABASES = json.loads(databases)
        connections.__dict__.pop("settings", None)
        connections._settings = settings.DATABASES  # type: ignore[attr-defined]

    from registry.context import ToolContext
    from registry.contract import Err, wrap_for_dispatch
    from registry.handlers import HandlerImportError, import_handler
    from registry.registry import get_registry

    handlers: dict[tuple[str, str], Any] = {}
    out.write(b"R")
    out.flush()
    while True:
        header = _read(inp, HEADER_SIZE)
        if header is None:
            return
        body = _read(inp, int.from_bytes(header, "big"))
        if body is None:
            return
        path, name, inputs, plain = pickle.loads(body)  # noqa: S301 (our own parent's call)
        close_old_connections()
        try:
            func = handlers.get((path, name))
            if func is None:
                try:
                    func = handlers[(path, name)] = wrap_for_dispatch(name, import_handler(path))
                except HandlerImportError:
                    _answer(
                        out,
                        "ok",
                        Err(f"tool {name!r} is unavailable: its handler could not be loaded", "ToolUnavailable"),
                    )
                    continue
            context = ToolContext(**{k: v for k, v in plain.items() if k not in ("tool_name", "reasoning")})
            context = context.for_call(get_registry(), plain["tool_name"], plain["reasoning"])
            envelope = func(inputs, context)
            if inspect.iscoroutine(envelope):
                envelope = asyncio.run(envelope)
            _answer(out, "ok", envelope)
        except BaseException as exc:  # noqa: BLE001 (handed to the parent, which classifies it)
            _answer(out, "raised", exc)
        finally:
            close_old_connections()


if __name__ == "__main__":
    main()
