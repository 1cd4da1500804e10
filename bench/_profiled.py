"""Run a module under cProfile, as ``python -m <module>`` would, and write the profile on SIGTERM.

``python -m cProfile -m uvicorn`` writes nothing when the bench stops the server: uvicorn
shuts down on SIGTERM, restores the handlers it found and raises the signal again, which
ends the process before cProfile's own exit path. The handler installed here is the one
uvicorn restores, so the re-raised signal writes the profile and exits. Times are the
main thread's CPU time (the event loop's, where every chunk is relayed).

Usage: python bench/_profiled.py PATH -m MODULE [ARGS...]
"""

from __future__ import annotations

import cProfile
import os
import runpy
import signal
import sys
import time
from types import FrameType


def main() -> None:
    path, flag, module, *args = sys.argv[1:]
    if flag != "-m":
        raise SystemExit(__doc__)
    sys.argv = [module, *args]
    sys.path[0] = os.getcwd()  # as under ``python -m``: not bench/, whose mcp.py would shadow the SDK
    # CPU time of the profiled (event loop's) thread, not wall time: on a machine shared
    # with the clients and other loads, wall time charges waits for a core to whatever ran.
    profile = cProfile.Profile(time.thread_time)

    def stop(signum: int, frame: FrameType | None) -> None:
        profile.disable()
        profile.dump_stats(path)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    profile.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        profile.disable()
        profile.dump_stats(path)


if __name__ == "__main__":
    main()
