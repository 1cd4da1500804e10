"""Handlers the killable-tool tests run in a child process (registry.killable): importable by it."""

import os
import time
from pathlib import Path

from registry.contract import Ok


def maybe_hang(inputs: dict, context) -> Ok:  # noqa: ANN001
    """Writes its process id to ``inputs['pid_file']``; then hangs (``hang``) or answers."""
    Path(inputs["pid_file"]).write_text(str(os.getpid()))
    if inputs.get("hang"):
        time.sleep(3600)
    return Ok(rows=1, data=f"ran in {os.getpid()} for {context.tenant_id} as {context.tool_name}")


def hanging_search(query: str, limit: int) -> list[dict]:
    """A web search backend that never answers (a lookup stuck in the resolver)."""
    Path(os.environ["EUNICE_TEST_PID_FILE"]).write_text(str(os.getpid()))
    time.sleep(3600)
    return []
